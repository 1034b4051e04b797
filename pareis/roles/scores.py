"""The scores role's computations (DESIGN §1, §2.5): keeping ``io.pareis.reliability_score`` current in DataHub.

For each sibling class a batch of run signals touches, at the time ``t`` of its latest run in the batch, the
class's score (:func:`pareis.core.protect.assess` over the runs at or before ``t``) and the scores of the model
versions downstream of its columns (each aggregating all its upstream classes' scores at ``t``). A value is written
— one ``structuredProperties`` PATCH per entity per batch — only when it differs from the last one written
(:class:`~pareis.store.scores.ScoreLedger`) and is not older than it (a replayed old run never rolls a score
back). Write volume is bounded by the batch: at most the class's members and
its downstream models, once each, whatever the number of runs.

The ledger is updated when the batch is computed, before its records are delivered, with the position of the
signals that caused each write (:class:`~pareis.roles.span.BatchSpan`): a batch redone after a crash writes again
what an earlier attempt recorded and may not have delivered, so a redo never loses a write. A score that only ages
between runs (freshness, the sliding windows) is rewritten on the class's next run.

:class:`ScoresHandler` is the role's handler: the scores of a batch, then the retrain gate's decisions of the models
downstream (:mod:`pareis.roles.gates`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from pareis.contracts.records import Message, OutRecord, RawMessage
from pareis.core.graph import LineageView, Memo, columns_of, union
from pareis.core.keys import sibling_classes
from pareis.core.protect import Survey, class_score, model_scores, survey, upstream_classes
from pareis.core.reliability import INCIDENT_WINDOW_MS
from pareis.core.runs import AssertionRun
from pareis.core.upstream import ModelUpstream
from pareis.core.walk_cache import WalkCache
from pareis.roles.batch_reads import RunReads
from pareis.roles.gates import GatePublisher
from pareis.roles.messages import RunSignal, decode_signal
from pareis.roles.output import ScoreOutput
from pareis.roles.score_writes import ScoreWrite
from pareis.roles.span import BatchSpan
from pareis.store.exposure import ExposureIndex
from pareis.store.exposure_reader import ExposureReader
from pareis.store.runs import RunHistory
from pareis.store.scores import Published, ScoreLedger


@dataclass(frozen=True)
class Assessed:
    """What one batch's signals cause: the score writes, and per dataset the model versions downstream of its
    class's columns (sorted)."""

    writes: list[ScoreWrite]
    downstream: Mapping[str, tuple[str, ...]]
    survey: Survey | None = None
    """The survey of the batch's datasets and every model version downstream, over the batch's view (None: an empty
    batch): the retrain gate's check 9 reads its scores' structure from it instead of surveying again."""


@dataclass
class ScorePublisher:
    """Computes the score writes of a batch of signals (see the module docstring)."""

    lineage: LineageView
    runs: RunHistory
    ledger: ScoreLedger
    exposure: ExposureIndex | None = None
    """The exposure index the lineage role keeps: what is downstream of a class's columns is read from its snapshot
    instead of walked (the walk down the trees below a model's sources cost a minute per model set at full scale)
    when the snapshot is of the current lineage generation (a score written must not lag the lineage: a model
    registered since would keep a stale score); None, nothing published, or behind: walked, the same answer."""
    walks: WalkCache[ModelUpstream] | None = None
    """The model upstreams kept from earlier batches of the same lineage generation (the batch's view says which:
    :class:`~pareis.core.walk_cache.WalkCache`, shared with the gate's); None: each batch walks them."""

    def writes(self, batch: Sequence[Message[RunSignal]], view: Memo | None = None) -> list[ScoreWrite]:
        """The writes ``batch`` causes; ``view``, the batch's view of :attr:`lineage` when the caller has one (its
        answers are then shared), else a new one."""
        return self.assess(batch, view).writes

    def assess(self, batch: Sequence[Message[RunSignal]], view: Memo | None = None) -> Assessed:
        """:meth:`writes`, and the model versions downstream of each dataset of ``batch``."""
        if not batch:
            return Assessed([], {})
        span = BatchSpan.of(batch)
        latest: dict[str, int] = {}
        for message in batch:
            signal = message.value
            t = signal.run.timestamp_ms
            latest[signal.dataset] = max(latest.get(signal.dataset, t), t)
        batch_view = _BatchView(
            view if view is not None else Memo(self.lineage),
            ExposureReader(self.exposure, fresh_only=True),
            RunReads(self.runs),
        )
        scores: dict[str, ScoreWrite] = {}
        values, downstream, surveyed = self._scores(batch_view, latest)
        for dataset, found in values.items():
            for urn, value in found.items():
                scores[urn] = ScoreWrite(urn, value, latest[dataset], dataset)  # the last class's value stands
        known = self.ledger.get(scores)
        out = []
        for urn in sorted(scores):
            w = scores[urn]
            seen = known.get(urn)
            redone = seen is not None and span.redoes(seen.partition, seen.offset)
            newer = seen is None or (w.at_ms >= seen.at_ms and w.score != seen.score)
            if newer or redone:
                out.append(w)
        self.ledger.put({w.urn: Published(w.score, w.at_ms, *span.position(w.cause)) for w in out})
        return Assessed(out, downstream, surveyed)

    def _scores(
        self, batch: _BatchView, latest: Mapping[str, int]
    ) -> tuple[dict[str, dict[str, float]], dict[str, tuple[str, ...]], Survey]:
        """Per dataset of the batch (sorted), the scores of its class's members and of the models downstream of
        its columns, at its latest run; those models; and the survey of them all. The models downstream are read
        first (the exposure of the batch's classes' columns), then the batch's datasets and every one of those
        models are surveyed at once: :func:`~pareis.core.protect.class_score` with the class's own feeding paths
        (:attr:`~pareis.core.protect.Survey.declared_feeding`: what a survey of the datasets alone finds) and
        :func:`~pareis.core.protect.model_scores` answer for each dataset."""
        view = batch.view
        models = _downstream(view, batch.exposed, latest)
        every = sorted({m for ms in models.values() for m in ms})
        s = survey(view, models=every, datasets=sorted(latest), exposed=batch.exposed, walks=self.walks)
        # Every timeline the scores below read, in one round trip (each dataset's class and, for its models, the
        # classes upstream of them, at its latest run) instead of one each.
        asked = {(k, latest[d]) for d in latest for k in (s.class_of[d], *upstream_classes(s, models[d]))}
        batch.runs.prefetch(q for k, at_ms in sorted(asked) if (q := self._question(batch, s, k, at_ms)) is not None)
        out: dict[str, dict[str, float]] = {}
        for dataset in sorted(latest):
            at_ms = latest[dataset]
            key = s.class_of[dataset]
            own = self._runs_of(batch, s, key, at_ms)
            score = class_score(s, key, own, at_ms, feeding=s.declared_feeding[key]).score
            values = out[dataset] = {urn: score for urn in s.classes[key].members if score is not None}
            if models[dataset]:
                runs = self._model_runs(batch, s, at_ms, key, own)
                # An unknown score (a model with no upstream dataset) is no value to write.
                scored = model_scores(s, models[dataset], runs, at_ms)
                values.update({sc.urn: sc.score for sc in scored if sc.score is not None})
        return out, models, s

    def _model_runs(
        self, batch: _BatchView, m: Survey, at_ms: int, key: str, own: list[AssertionRun]
    ) -> Callable[[str], list[AssertionRun]]:
        """The runs of each class of ``m`` at ``at_ms``, the class ``key`` (whose runs ``own`` are read) included."""
        return lambda k: own if k == key else self._runs_of(batch, m, k, at_ms)

    def _runs_of(self, batch: _BatchView, s: Survey, key: str, at_ms: int) -> list[AssertionRun]:
        question = self._question(batch, s, key, at_ms)
        if question is None:
            return []
        return [r for r in batch.runs.timeline(*question) if r.timestamp_ms <= at_ms]

    def _question(self, batch: _BatchView, s: Survey, key: str, at_ms: int) -> tuple[set[str], int] | None:
        """The timeline question (assertions, floor) of the runs of class ``key`` at ``at_ms``; None: it has no
        assertion."""
        cls = s.classes[key]
        names = set(cls.assertions)
        names.update(batch.assertions_of(self.runs, s, cls.members))
        return (names, at_ms - INCIDENT_WINDOW_MS) if names else None


def _downstream(view: Memo, exposed: ExposureReader, datasets: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Per dataset, the model versions downstream of its sibling class's columns (sorted)."""
    classes = sibling_classes(view, datasets)
    schemas = columns_of(view, sorted(union(classes)))
    exp = exposed(view, union(schemas))
    out = {}
    for d, members in classes.items():
        out[d] = tuple(sorted({m for member in members for c in schemas[member] for m in exp.models[c]}))
    return out


class ScoresHandler:
    """The scores role's handler over a batch of run signals (the decoder filters out lineage signals): the batch's
    score writes as the records of ``output`` (:mod:`pareis.roles.output`), then, with ``gates``, the retrain gate's
    records of the models downstream of its datasets at its latest run time (:mod:`pareis.roles.gates`). At-least-once:
    the ledgers make a redo publish again only what may not have been delivered."""

    def __init__(self, publisher: ScorePublisher, output: ScoreOutput, gates: GatePublisher | None = None) -> None:
        self._publisher = publisher
        self._output = output
        self._gates = gates

    def __call__(self, batch: Sequence[Message[RunSignal]]) -> list[OutRecord]:
        if not batch:
            return []
        # One view of the index for the batch (its questions asked once), of the generation read before its first
        # question: what the gate's radii kept from earlier batches are valid for (pareis.core.walk_cache).
        exposure = self._publisher.exposure
        view = Memo(self._publisher.lineage, generation=None if exposure is None else exposure.generation())
        assessed = self._publisher.assess(batch, view)
        out = self._output.scores(assessed.writes)
        if self._gates is not None:
            at_ms = max(m.value.run.timestamp_ms for m in batch)
            out += self._gates.records(view, assessed.downstream, at_ms, BatchSpan.of(batch), assessed.survey)
        return out


def decode(raw: RawMessage) -> RunSignal | None:
    """The role's decoder: a run signal; None for a lineage signal (the incidents role's alone); DecodeError
    (Poison) for bytes that are no signal."""
    assert raw.value is not None  # the runtime filters tombstones before decoding
    signal = decode_signal(raw.value, raw.origin)
    return signal if isinstance(signal, RunSignal) else None


class _BatchView:
    """What the score computations of one batch share: one view of the index (each question asked once per
    batch: the batch is computed over one snapshot of it, as one signal's analysis is), one reader of the exposure
    index's snapshot, the run history's timelines read ahead, and the assertions with runs on each dataset."""

    def __init__(self, view: Memo, exposed: ExposureReader, runs: RunReads) -> None:
        self.view = view
        self.exposed = exposed
        self.runs = runs
        self._assertions: dict[str, list[str]] = {}

    def assertions_of(self, runs: RunHistory, s: Survey, members: Sequence[str]) -> set[str]:
        """The assertions with runs on any of ``members`` (of a class of ``s``): read for every member of every
        class of ``s`` at once, on the first question about one of them (one round trip per survey, not per
        member), and kept for the batch."""
        if any(m not in self._assertions for m in members):
            every = sorted({m for cls in s.classes.values() for m in cls.members} - self._assertions.keys())
            self._assertions.update(runs.assertions_by_dataset(every))
        return {a for m in members for a in self._assertions.get(m, ())}
