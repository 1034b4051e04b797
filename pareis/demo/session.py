"""A demo session: the timeline replayed step by step into the in-process broker, every role run to quiescence
after each step, and what changed observed.

Nothing here is demo-only logic: the proposals go through :func:`pareis.compose.replay.replayer` (the GMS emulation of
``pareis replay``), the roles are the pipelines of :func:`pareis.compose.roles.embedded_runner` over
:class:`~pareis.compose.ports.Ports` in-memory ports, and the analysis shown is ``pareis analyze``'s
(:func:`pareis.answers.incidents.analysis`) over the same stores the roles filled.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pareis.answers.sources import Sources
from pareis.compose.ports import Ports
from pareis.compose.replay import replayer
from pareis.compose.roles import embedded_runner
from pareis.config import Settings
from pareis.core.intents import IncidentFacts
from pareis.core.lifecycle import IncidentState, Status
from pareis.datahub.files.metadata_file import Proposal, read_proposals
from pareis.datahub.writes.writer import Mcp, MemoryWriter
from pareis.kafka.memory import MemoryBroker
from pareis.tickets.memory import MemoryTicketer

TOOLS = ("slack", "jira", "linear")
DAY_MS = 86_400_000


@dataclass(frozen=True)
class Step:
    """One step of the timeline: a name, its simulated time and its proposals."""

    name: str
    at_ms: int
    proposals: tuple[Proposal, ...]


@dataclass(frozen=True)
class TicketEvent:
    tool: str
    ticket: str
    action: str  # opened | commented | closed
    text: str


@dataclass
class StepOutcome:
    """What one step changed: change-log records, DataHub writes, ticket events, incident transitions."""

    step: Step
    published: dict[str, int]
    writes: list[Mcp] = field(default_factory=list)
    tickets: list[TicketEvent] = field(default_factory=list)
    transitions: list[tuple[str, Status, Status, IncidentFacts | None]] = field(default_factory=list)
    dead_letters: int = 0


def steps_of(files: Sequence[Path]) -> list[Step]:
    """Several files: one step each, in the order given. One file: one step per simulated day of its clock."""
    if len(files) > 1:
        out = []
        for path in files:
            proposals = tuple(read_proposals([path]))
            out.append(Step(path.stem, _first_clock(proposals), proposals))
        return out
    by_day: dict[int, list[Proposal]] = {}
    for proposal in read_proposals(files):
        by_day.setdefault(_clock(proposal) // DAY_MS, []).append(proposal)
    return [
        Step(dt.datetime.fromtimestamp(day * DAY_MS / 1000, dt.UTC).strftime("%Y-%m-%d"), day * DAY_MS, tuple(ps))
        for day, ps in sorted(by_day.items())
    ]


def _clock(proposal: Proposal) -> int:
    return int((proposal.system_metadata or {}).get("lastObserved") or 0)


def _first_clock(proposals: Iterable[Proposal]) -> int:
    return min((_clock(p) for p in proposals if _clock(p)), default=0)


class DemoSession:
    """Every role over one in-process broker and fresh in-memory ports, fed one step at a time."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.broker = MemoryBroker(partitions=3)
        self.ticketers = [MemoryTicketer(tool) for tool in TOOLS]
        self.ports = Ports.in_memory(self.ticketers)
        self.replayer = replayer(settings, self.broker, default_ms=0)
        self.runner = embedded_runner(settings, self.broker, self.ports)
        self._ticket_seen: dict[tuple[str, str], tuple[int, bool]] = {}
        self._states: dict[str, IncidentState] = {}

    @property
    def writer(self) -> MemoryWriter:
        assert isinstance(self.ports.datahub, MemoryWriter)
        return self.ports.datahub

    def run(self, step: Step) -> StepOutcome:
        """Replay ``step``, run every role until no input is left, and report what changed."""
        writes_before = len(self.writer.proposals)
        report = self.replayer.run(step.proposals)
        self.runner.run()
        outcome = StepOutcome(step, dict(report.published))
        outcome.writes = list(self.writer.proposals[writes_before:])
        outcome.tickets = self._ticket_events()
        outcome.transitions = self._transitions()
        outcome.dead_letters = self.broker.size(self.settings.kafka.topics.dlq)
        return outcome

    def facts(self, dataset: str) -> IncidentFacts | None:
        """``pareis analyze --dataset`` over the roles' own stores; None when the dataset never failed."""
        from pareis.answers.incidents import analysis
        from pareis.answers.sources import CannotEvaluate

        try:
            return analysis(self.sources, dataset=dataset).facts
        except CannotEvaluate:
            return None

    @property
    def sources(self) -> Sources:
        """The read side's view of the roles' own stores (what ``pareis analyze`` would read live)."""
        from pareis.contracts.ledger import LedgerValues

        ports = self.ports
        tickets = ports.ledger if isinstance(ports.ledger, LedgerValues) else None  # the refs the effects role kept
        return Sources(
            ports.lineage,
            ports.runs,
            ports.incidents,
            origin="demo (in memory)",
            tickets=tickets,
            reaches=ports.reaches,
            serving_aliases=tuple(self.settings.datahub.serving_aliases),
        )

    def _ticket_events(self) -> list[TicketEvent]:
        events = []
        for ticketer in self.ticketers:
            for ticket in ticketer.tickets:
                key = (ticketer.tool, ticket.ref.id)
                comments, closed = self._ticket_seen.get(key, (-1, False))
                if comments < 0:
                    events.append(TicketEvent(ticketer.tool, ticket.ref.id, "opened", ticket.incident.title))
                    comments = 0
                events += [
                    TicketEvent(ticketer.tool, ticket.ref.id, "commented", text) for text in ticket.comments[comments:]
                ]
                if ticket.closed and not closed:
                    events.append(TicketEvent(ticketer.tool, ticket.ref.id, "closed", ""))
                self._ticket_seen[key] = (len(ticket.comments), ticket.closed)
        return events

    def _transitions(self) -> list[tuple[str, Status, Status, IncidentFacts | None]]:
        """Incident keys whose status or tracked incident (revision) changed in this step, with their analysis."""
        out = []
        for dataset in sorted(self._incident_keys()):
            state = self.ports.incidents.get(dataset)
            before = self._states.get(dataset, IncidentState(dataset))
            if state.status is not before.status or state.incident != before.incident:
                out.append((dataset, before.status, state.status, self.facts(dataset)))
            self._states[dataset] = state
        return out

    def _incident_keys(self) -> set[str]:
        # Signals are keyed by the dataset's incident key: every key that ever got a signal.
        return {(record.key or b"").decode() for record in self.broker.records(self.settings.kafka.topics.signals)}
