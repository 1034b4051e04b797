"""The incidents role's side of live re-evaluation (DESIGN §3): a lineage signal stepped, and the watch index kept.

* :func:`advance` steps one signal: a run through :func:`~pareis.core.lifecycle.step`, a lineage change through
  :func:`~pareis.core.lifecycle.recheck` (an Update when the recomputed answer differs, nothing otherwise), and
  says which facts it computed.
* :class:`IncidentWatch` writes, once per batch, the watch set (:func:`pareis.core.watch.watch_set`) of every
  dataset whose incident the batch analysed while ACTIVE, and removes the set of every dataset the batch left not
  ACTIVE — so the lineage role always checks its changes against the incidents as last analysed. It is written
  before the step journal and the states: a crash in between makes the redo recompute (and rewrite the same sets)
  or replay the journal (whose outcome the index already holds). A set is advisory — a stale one only costs a
  recomputation that finds nothing to update — so it is not part of the Kafka transaction.
"""

from __future__ import annotations

from collections.abc import Mapping

from pareis.core.analysis import AnalysisInputs
from pareis.core.graph import LineageView, Memo, Query, Rel, memoised
from pareis.core.intents import IncidentFacts, Intent
from pareis.core.lifecycle import IncidentState, Status, followed, recheck, step
from pareis.core.watch import follow_set, processes_of, watch_set
from pareis.roles.messages import AnySignal, LineageSignal
from pareis.store.watch import WatchStore


def advance(
    state: IncidentState, signal: AnySignal, inputs: AnalysisInputs
) -> tuple[IncidentState, tuple[Intent, ...], IncidentFacts | None]:
    """Step ``signal`` on ``state``, at the signal's log time: (new state, intents, the facts of the incident as
    analysed, or None when nothing was analysed or nothing changed). ValueError as the core raises it."""
    if isinstance(signal, LineageSignal):
        return recheck(state, inputs, signal.logged_ms, signal.entities)
    after, intents = step(state, signal.signal, inputs, signal.logged_ms)
    return after, intents, intents[-1].facts if intents else None


def wants_inputs(state: IncidentState, signal: AnySignal) -> bool:
    """Whether stepping ``signal`` on ``state`` needs the analysis inputs: a lineage signal only concerns an ACTIVE
    incident or a resolved one still :func:`~pareis.core.lifecycle.followed` (any other is left alone, and costs no
    read)."""
    return not isinstance(signal, LineageSignal) or state.status is Status.ACTIVE or followed(state)


class IncidentWatch:
    """Keeps ``store`` (the watch index) in step with the incidents, reading processes from ``lineage``."""

    def __init__(self, store: WatchStore, lineage: LineageView) -> None:
        self._store = store
        self._lineage = lineage

    def put(self, analysed: Mapping[str, tuple[IncidentState, IncidentFacts | None]], view: Memo | None = None) -> None:
        """``analysed``: per dataset, its state after the batch and the facts last computed for it (None: none).
        With facts: ACTIVE → its watch set replaced; RESOLVED → its follow set (:func:`~pareis.core.watch.follow_set`:
        empty, so removed, once nothing is left to re-decide). CLEAR → removed. Without facts → left as it is.
        ``view``: the view of the index the facts were computed over (the batch's), whose answers the processes'
        reads reuse; a view of its own otherwise."""
        watches: dict[str, tuple[str, ...]] = {}
        view = view if view is not None else memoised(self._lineage)
        # Every set's processes asked of the index in one round trip (each set then reads its own from the memo).
        prefetch(view, [f for state, f in analysed.values() if f is not None and state.status is Status.ACTIVE])
        for dataset, (state, facts) in sorted(analysed.items()):
            if state.status is Status.CLEAR:
                watches[dataset] = ()
            elif facts is None:
                continue
            elif state.status is Status.ACTIVE:
                watches[dataset] = watch_set(facts, processes_of(view, facts))
            else:
                watches[dataset] = follow_set(facts)
        self._store.put(watches)


def prefetch(view: Memo, facts: list[IncidentFacts]) -> None:
    """Ask ``view`` at once what :func:`~pareis.core.watch.processes_of` will ask of it for each of ``facts``."""
    if not facts:
        return
    datasets = sorted({d for f in facts for d in (f.dataset, *f.blast.datasets)})
    models = sorted({m.urn for f in facts for m in f.blast.models})
    view.lookup(
        [Query(Rel.READS, datasets), Query(Rel.WRITES, datasets, reverse=True), Query(Rel.TRAINS, models, reverse=True)]
    )
