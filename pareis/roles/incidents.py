"""The incidents role's behaviour: per signal, load the dataset's incident state, analyse, step the state machine
(DESIGN §3), and turn the intents into outputs for the role's Kafka transaction.

Per signal (in offset order; several signals of one dataset in a batch chain in memory):

1. **State.** The incident store's state of the signal's dataset — unless the step journal holds steps of this
   dataset at or after the signal's offset: then the signal is being redone (an aborted transaction), and the
   journaled steps are replayed as they were, outputs included (:mod:`pareis.store.journal`); computing them
   again could differ, since the run history may have grown since.
2. **Inputs** (:func:`analysis_inputs`): the runs of every assertion of the dataset's sibling class (and of the
   incident being tracked) from :func:`~pareis.core.lifecycle.history_floor` on (from the signal's run when that
   is older); the blast radius of each
   assertion with a FAILURE among them (an assertion whose definition is not indexed yet counts as covering its
   whole assertee dataset); every version of each affected model group, with its training time from the lineage
   index (:func:`pareis.core.catalog.versions_by_group`); the assertion types as failure classes; what says which
   versions serve (deployments, aliases: the serving aliases are the setting ``datahub.serving_aliases``); and, per
   affected group, the other incidents that reached it, from the reach index (:mod:`pareis.roles.incident_reaches`).
3. **Step** with ``now_ms`` = the change log's time of the run (carried by the signal), never the wall clock,
   so a replay writes the same bytes. A lineage signal (DESIGN §3, live re-evaluation) recomputes an ACTIVE
   incident instead and writes an Update when the answer changed (:mod:`pareis.roles.incident_watch`); with a
   ``watch``, the watch sets of the incidents the batch analysed are written before the journal.
4. **Outputs**, per intent: the records of its DataHub writes, from the role's output port
   (:mod:`pareis.roles.output`: the MCP topic, ``datahub.write`` effects, or a writer that takes them), then one
   ticket effect (open / comment / close).

The batch's journal entries (each dataset's, from its first signal in the batch on) and stored states are read
first, one round trip each (:meth:`~pareis.store.journal.StepJournal.entries_of`,
:meth:`~pareis.store.incidents.IncidentStore.get_many`); each dataset's signals then chain as above, and the steps
are taken in the batch's order, so the outputs are those of one signal at a time.

After the whole batch is computed, the reaches of the incidents it opened, updated or resolved (before the journal,
as the watch sets: :mod:`pareis.roles.incident_reaches`), the journal entries (each step that changed a state, with
its outputs) and then the new states are written, one round trip each (journal first: a crash between the two must
still find the journal; so a redo writes the replayed states again). The runtime then produces the outputs and
commits the input offsets in one transaction; a redo replays the journal, so it produces the same records, byte for
byte. Once the transaction committed, the runtime calls :meth:`IncidentsHandler.committed`, which releases the
journal entries below the committed offsets.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from urllib.parse import quote

from pareis.config import DatahubSettings
from pareis.contracts.records import Message, OutRecord, RawMessage
from pareis.core import analysis
from pareis.core.analysis import AnalysisInputs
from pareis.core.brief import Span, brief, linked
from pareis.core.graph import LineageView, Memo
from pareis.core.incident_text import markdown
from pareis.core.intents import IncidentFacts, Intent, Open, Update
from pareis.core.keys import sibling_classes
from pareis.core.lifecycle import IncidentState, history_floor
from pareis.core.radii import KeptRadii
from pareis.core.serving import DEFAULT_SERVING_ALIASES, Reach
from pareis.datahub.writes import postmortem
from pareis.datahub.writes.incident_writes import incident_link
from pareis.errors import Fatal
from pareis.roles.batch_reads import RunReads
from pareis.roles.incident_reaches import BatchReaches, intent_reaches, published_groups
from pareis.roles.incident_watch import IncidentWatch, advance, wants_inputs
from pareis.roles.messages import (
    AnySignal,
    Effect,
    RunSignal,
    TicketClose,
    TicketComment,
    TicketOpen,
    decode_signal,
    effect_record,
)
from pareis.roles.output import DatahubOutput
from pareis.store.exposure import ExposureIndex
from pareis.store.exposure_reader import kept_radii
from pareis.store.incidents import IncidentStore
from pareis.store.journal import JournalEntry, Position, StepJournal
from pareis.store.reaches import ReachStore
from pareis.store.runs import RunHistory
from pareis.tickets.port import IncidentTicket


def decode(raw: RawMessage) -> AnySignal:
    """The role's decoder: a signal, or DecodeError (Poison)."""
    assert raw.value is not None  # the runtime filters tombstones before decoding
    return decode_signal(raw.value, raw.origin)


GroupReaches = Callable[[Collection[str]], Mapping[str, tuple[Reach, ...]]]
"""Groups → the incidents that reached each (:class:`~pareis.roles.incident_reaches.BatchReaches`)."""


def analysis_inputs(
    view: LineageView,
    runs: RunHistory,
    state: IncidentState,
    signal: AnySignal,
    reaches: GroupReaches | None = None,
    serving_aliases: tuple[str, ...] = DEFAULT_SERVING_ALIASES,
    shared: AnalysisInputs | None = None,
) -> AnalysisInputs:
    """What :func:`~pareis.core.lifecycle.step` needs for ``signal`` on ``state`` (see the module docstring):
    ``reaches`` gives the other incidents that reached the affected groups (None: none counted), ``serving_aliases``
    the aliases that mean a version serves.

    ``view`` should be a :class:`~pareis.core.graph.Memo` so one step asks the index each question once; ``shared``:
    what the batch read already (:func:`shared_inputs`): its blast radii, and the versions, owners and serving facts
    of everything they reach.
    """
    run = signal.run if isinstance(signal, RunSignal) else None
    timeline = runs.timeline(*timeline_question(view, runs, state, signal))
    failing = (*timeline, run) if run is not None else timeline
    known = None if shared is None else shared.blast
    found = analysis.analysis_inputs(view, timeline, failing, serving_aliases, known=known, batch=shared)
    if reaches is None or not found.versions:
        return found
    return dataclasses.replace(found, reaches=dict(reaches(found.versions)))


def timeline_question(
    view: LineageView, runs: RunHistory, state: IncidentState, signal: AnySignal
) -> tuple[set[str], int | None]:
    """The (assertions, floor) of the timeline :func:`analysis_inputs` reads for ``signal`` on ``state``."""
    dataset = signal.dataset
    run = signal.run if isinstance(signal, RunSignal) else None
    assertions = {run.assertion} if run is not None else set()
    for member in sibling_classes(view, [dataset])[dataset]:
        assertions.update(runs.assertions_of(member))
    if state.incident is not None:
        # The tracked incident's assertions even if the sibling class shrank since: its opening run must be read.
        assertions.update(state.incident.published.assertions)
    floor = history_floor(state, rechecking=run is None)
    if floor is not None and run is not None and run.timestamp_ms < floor:
        # A late run (signals of different assertions travel on different partitions): read from its own time,
        # so that its window sees the runs before it (its blind window) rather than only the floor's seeds.
        floor = run.timestamp_ms
    return assertions, floor


def shared_inputs(
    view: Memo,
    runs: RunReads,
    firsts: Sequence[tuple[AnySignal, IncidentState]],
    kept: KeptRadii | None = None,
) -> AnalysisInputs | None:
    """Read at once what the analyses of ``firsts`` (each dataset's first signal of a batch, on its state before
    it) will ask: the assertions of their sibling classes and their timelines into ``runs`` (two round trips for the
    batch), the blast radius of each defined assertion failing in them — those ``kept`` holds read (one round trip),
    the others walked together first (:func:`pareis.core.analysis.walk_together`) — and, into ``view``, the
    versions, owners and serving facts of everything those reach (a few round trips for the batch instead of a few
    per signal). What was read is returned for the signals to share (``shared`` of :func:`analysis_inputs`: the
    radii, and the versions, owners and serving facts of everything reached); a batch of one signal reads ahead only
    its runs and its kept radii (nothing to share, and no analysis twice).
    Answers are unchanged: each signal's analysis is the same computation over the same view and the same history
    (a kept radius is the walk's own answer over this lineage generation); an error of a store is one the signals'
    own reads would meet."""
    if not firsts:
        return None
    classes = sibling_classes(view, {signal.dataset for signal, _ in firsts})
    runs.assertions_by_dataset({member for members in classes.values() for member in members})
    questions = [timeline_question(view, runs, state, signal) for signal, state in firsts]
    runs.prefetch(questions)
    timelines = [run for question in questions for run in runs.timeline(*question)]
    failing = [*timelines, *(s.run for s, _ in firsts if isinstance(s, RunSignal))]
    known = {} if kept is None else dict(kept(view, {r.assertion for r in failing if r.fails}))
    if len(firsts) == 1:
        # The signal's own analysis asks the rest in as many round trips, and computes it only once.
        return AnalysisInputs(runs=(), blast=known)
    analysis.walk_together(view, [r for r in failing if r.assertion not in known])
    return analysis.shared_analysis(view, timelines, failing, known=known)


def ticket_effect(intent: Intent, settings: DatahubSettings, console_url: str | None = None) -> Effect:
    """The ticket effect of an intent: Open → open; Update → comment; Resolve → close with the postmortem. An open
    carries the ticket, and a close the ticket as of the resolve: the incident's brief (decision first, entities
    linked to DataHub's web app at ``settings.ui_url``, links to the incident in DataHub and in Mission Control at
    ``console_url``)."""
    facts = intent.facts
    effect_id = f"{intent.effect_id}/ticket"
    if isinstance(intent, Open):
        return TicketOpen(effect_id, _ticket(intent, settings, console_url), intent.at_ms)
    if isinstance(intent, Update):
        return TicketComment(effect_id, facts.urn, intent.comment, intent.at_ms)
    final = _ticket(intent, settings, console_url)
    return TicketClose(effect_id, facts.urn, postmortem.text(intent, settings), intent.at_ms, final)


def _ticket(intent: Intent, settings: DatahubSettings, console_url: str | None) -> IncidentTicket:
    """What a ticket says of ``intent``'s incident (:func:`ticket_effect`)."""
    facts = intent.facts
    links = []
    if settings.ui_url:
        links.append(Span("Open in DataHub", incident_link(facts, settings)))
    if console_url:
        links.append(
            Span("Open in Mission Control", f"{console_url.rstrip('/')}/incidents/{quote(facts.urn, safe='')}")
        )
    found = (
        brief(facts, ui_url=settings.ui_url, links=links)
        if intent.brief is None
        else linked(intent.brief, settings.ui_url, links)  # the same brief, not analysed again
    )
    url = links[0].url if links else None
    return IncidentTicket(facts.urn, intent.title, markdown(found), facts.severity, url, facts.owners.everyone, found)


@dataclass(frozen=True)
class _Reads:
    """What one batch's steps read through: its view of the index, its run-history reads, what its analyses share
    (None: nothing), and the reaches of the groups it meets (None: no reach index)."""

    view: Memo
    runs: RunReads
    shared: AnalysisInputs | None
    reaches: GroupReaches | None = None


@dataclass(frozen=True)
class Step:
    """What one signal's step did: the states its dataset went through (to save; the last one stands), its journal
    entry (None: replayed or nothing changed), its analysis for the watch (state after, facts), its outputs, and
    the reaches of the incidents its intents are about (for the reach index)."""

    changed: tuple[IncidentState, ...]
    entry: JournalEntry | None
    analysed: tuple[IncidentState, IncidentFacts | None] | None
    outputs: tuple[OutRecord, ...]
    reaches: Mapping[str, Mapping[str, Reach]] = dataclasses.field(default_factory=dict)


class IncidentsHandler:
    """The role's handler over its ports.

    ``output`` gives the records of the DataHub writes (:mod:`pareis.roles.output`); the ticket effects go to
    ``effects_topic``, linking Mission Control at ``console_url`` (``web.public_url``) when given. Reliability scores
    are the scores role's (:mod:`pareis.roles.scores`): an incident never waits for one. ``reaches``, when given, is
    the reach index the recommendations read and the role keeps (:mod:`pareis.roles.incident_reaches`);
    ``serving_aliases`` the setting ``datahub.serving_aliases``; ``exposure``, when given, the exposure index whose
    snapshot keeps the blast radius of every defined assertion (:mod:`pareis.core.radii`): read instead of walked.
    """

    def __init__(
        self,
        *,
        lineage: LineageView,
        runs: RunHistory,
        incidents: IncidentStore,
        journal: StepJournal,
        output: DatahubOutput,
        datahub: DatahubSettings,
        effects_topic: str,
        watch: IncidentWatch | None = None,
        console_url: str | None = None,
        reaches: ReachStore | None = None,
        serving_aliases: Sequence[str] = DEFAULT_SERVING_ALIASES,
        exposure: ExposureIndex | None = None,
    ) -> None:
        self._kept: KeptRadii | None = None if exposure is None else partial(kept_radii, exposure)
        self._reaches = reaches
        self._aliases = tuple(serving_aliases)
        self._console_url = console_url
        self._watch = watch
        self._lineage = lineage
        self._runs = runs
        self._incidents = incidents
        self._journal = journal
        self._output = output
        self._datahub = datahub
        self._effects = effects_topic

    def __call__(self, batch: Sequence[Message[AnySignal]]) -> list[OutRecord]:
        chains: dict[str, list[Message[AnySignal]]] = {}
        for message in batch:
            chains.setdefault(message.value.dataset, []).append(message)
        # One round trip each for the whole batch: every dataset's journal entries from its first signal on, and
        # every dataset's stored state (used where the journal has none).
        first = {d: Position(ms[0].topic, ms[0].partition, ms[0].offset) for d, ms in chains.items()}
        journaled = self._journal.entries_of(first)
        stored = self._incidents.get_many(d for d in chains if not journaled[d])
        starts = {d: journaled[d][0].before if journaled[d] else stored[d] for d in chains}
        # The datasets' chains are independent (one state each); their steps are then taken in the batch's order.
        # One view of the index for the whole batch (each question asked of it once, as the batch is computed over
        # one snapshot of it): small blasts of one batch share most of their upstream.
        view = Memo(self._lineage)
        runs = RunReads(self._runs)
        # Each dataset's first signal is analysed on its stored state (its chain's later ones on states the batch
        # computes, read as they come); replayed signals read nothing.
        firsts = [(ms[0].value, starts[d]) for d, ms in chains.items() if not journaled[d]]
        wanted = [(s, state) for s, state in firsts if wants_inputs(state, s)]
        shared = shared_inputs(view, runs, wanted, self._kept)
        reader = None
        if self._reaches is not None:  # one round trip for the groups the batch is expected to meet
            radii = () if shared is None else shared.blast.values()
            walked = {m.group or m.urn for radius in radii for m in radius.models}
            reader = BatchReaches(self._reaches, walked | published_groups(starts.values()))
        reads = _Reads(view, runs, shared, reader)
        steps = {d: self._chain(reads, ms, journaled[d], starts[d]) for d, ms in chains.items()}
        analysed: dict[str, tuple[IncidentState, IncidentFacts | None]] = {}
        entries: list[JournalEntry] = []
        changed: dict[str, IncidentState] = {}
        reached: dict[str, Mapping[str, Reach]] = {}
        out: list[OutRecord] = []
        taken = dict.fromkeys(chains, 0)
        for message in batch:
            dataset = message.value.dataset
            step = steps[dataset][taken[dataset]]
            taken[dataset] += 1
            if isinstance(step, BaseException):
                raise step
            for state in step.changed:
                changed[dataset] = state
            if step.entry is not None:
                entries.append(step.entry)
            if step.analysed is not None:
                analysed[dataset] = step.analysed
            reached.update(step.reaches)
            out.extend(step.outputs)
        if self._watch is not None:
            self._watch.put(analysed, view)
        if self._reaches is not None and reached:
            self._reaches.put(reached)
        self._journal.record(entries)
        self._incidents.put_many(changed.values())
        return out

    def _chain(
        self,
        reads: _Reads,
        messages: Sequence[Message[AnySignal]],
        journaled: Sequence[JournalEntry],
        state: IncidentState,
    ) -> list[Step | Exception]:
        """The steps of one dataset's signals of a batch (in offset order) from ``state``; the first error ends
        the chain (the batch stops there, as it would one signal at a time)."""
        replay = deque(journaled)
        steps: list[Step | Exception] = []
        for message in messages:
            try:
                step, state = self._step(reads, message, replay, state)
            except Exception as exc:  # noqa: BLE001 - not handled here: re-raised in the batch's order by the caller
                steps.append(exc)
                break
            steps.append(step)
        return steps

    def _step(
        self, reads: _Reads, message: Message[AnySignal], replay: deque[JournalEntry], state: IncidentState
    ) -> tuple[Step, IncidentState]:
        signal = message.value
        dataset = signal.dataset
        position = Position(message.topic, message.partition, message.offset)
        changed: list[IncidentState] = []
        while replay and replay[0].position.offset < position.offset:
            # A journaled step whose signal is not redone (it cannot be: a partition is read in order); keep
            # the chain of states intact all the same.
            state = replay.popleft().after
            changed.append(state)
        if replay:
            # A redo: the aborted attempt's step is replayed as it was; where it has no entry, the step
            # changed nothing. The replayed state is saved again: the aborted attempt may have journaled the
            # step and failed before its state write, and the next signal would then start from the old state.
            if replay[0].position.offset == position.offset:
                replayed = replay.popleft()
                state = replayed.after
                changed.append(state)
                return Step(tuple(changed), None, None, replayed.outputs), state
            return Step(tuple(changed), None, None, ()), state
        before = state
        if not wants_inputs(before, signal):
            return Step(tuple(changed), None, None, ()), state
        inputs = analysis_inputs(reads.view, reads.runs, before, signal, reads.reaches, self._aliases, reads.shared)
        try:
            after, intents, facts = advance(before, signal, inputs)
        except ValueError as exc:  # the stores disagree with each other: not this signal's fault
            raise Fatal(f"incident state of {dataset} is inconsistent with its run history: {exc}") from exc
        produced = tuple(record for intent in intents for record in self._outputs(intent))
        entry: JournalEntry | None = None
        if after != before:
            entry = JournalEntry(position, before, after, produced)
            changed.append(after)
        analysed = (after, facts) if facts is not None or after.status is not before.status else None
        return Step(tuple(changed), entry, analysed, produced, intent_reaches(intents)), after

    def committed(self, offsets: Mapping[tuple[str, int], int]) -> None:
        """The runtime committed ``offsets`` (the next offset per input partition): the journal entries below
        them can never be redone, so they are released (:meth:`~pareis.store.journal.StepJournal.release`)."""
        for (topic, partition), below in sorted(offsets.items()):
            self._journal.release(topic, partition, below)

    def _outputs(self, intent: Intent) -> list[OutRecord]:
        ticket = ticket_effect(intent, self._datahub, self._console_url)
        return [*self._output.intent(intent), effect_record(self._effects, ticket)]
