"""What the incident state machine asks the world to do: Open, Update and Resolve intents (DESIGN §3).

Intents are plain frozen values carrying everything the DataHub writer and the ticketers need, so neither has
to read anything back. Each has a deterministic ``effect_id`` (incident URN, kind, revision) so that delivery
downstream is idempotent, and a ``to_json`` view (lists sorted; encode with sorted keys) for logs, answers and
the determinism tests. Intents never travel themselves: the incidents role turns each into DataHub proposals and
one ticket effect, whose only wire format is ``pareis.effects.v1`` (:mod:`pareis.roles.messages`).
:func:`pareis.core.analysis.analyse` computes :class:`IncidentFacts`; the texts are rendered by
:mod:`pareis.core.incident_text`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from pareis.core.contamination import GroupContamination
from pareis.core.impact import BlastRadius, Severity
from pareis.core.owners import IncidentOwners
from pareis.core.runs import ResultType
from pareis.core.serving import Recommendation
from pareis.core.window import IncidentWindow

if TYPE_CHECKING:  # the brief renders intents' facts: importing it here at run time would be a cycle
    from pareis.core.brief import Brief

TAG_AT_RISK = "urn:li:tag:pareis-at-risk"


class RetrainStatus(StrEnum):
    """``io.pareis.retrain_status`` of a model version."""

    BLOCKED = "BLOCKED"
    OK = "OK"


@dataclass(frozen=True)
class IncidentFacts:
    """The analysis of one incident at one moment: window, blast radius, verdicts, what to tag and block."""

    urn: str
    dataset: str
    window: IncidentWindow
    blast: BlastRadius
    contamination: tuple[GroupContamination, ...]
    retrain: tuple[tuple[str, RetrainStatus], ...]
    at_risk: tuple[str, ...]
    failure_class: str
    owners: IncidentOwners = field(default_factory=IncidentOwners)
    decisions: tuple[Recommendation, ...] = ()
    """The recommendation per affected group (DESIGN §2.3), in group order: what a person does now."""

    @property
    def severity(self) -> Severity:
        return self.blast.severity

    @property
    def priority(self) -> int:
        return self.severity.priority

    @property
    def source_assertion(self) -> str | None:
        """The assertion whose FAILURE run opened the incident (``incidentInfo.source.sourceUrn``); the first
        in URN order when several failed at that millisecond."""
        openers = sorted(
            run.assertion
            for run in self.window.runs
            if run.timestamp_ms == self.window.first_failure_ms and run.result is ResultType.FAILURE
        )
        return openers[0] if openers else (self.window.assertions[0] if self.window.assertions else None)

    @property
    def contaminated_versions(self) -> tuple[str, ...]:
        return tuple(sorted(v.urn for group in self.contamination for v in group.contaminated))

    @property
    def rollbacks(self) -> tuple[tuple[str, str | None], ...]:
        return tuple((g.group, g.safe_rollback.urn if g.safe_rollback else None) for g in self.contamination)

    def to_json(self) -> dict[str, Any]:
        return {
            "assertions": list(self.window.assertions),
            "at_risk": list(self.at_risk),
            "blast": self.blast.to_json(),
            "contamination": [g.to_json() for g in self.contamination],
            "dataset": self.dataset,
            "decisions": [d.to_json() for d in self.decisions],
            "failure_class": self.failure_class,
            "incident": self.urn,
            "owners": self.owners.to_json(),
            "priority": self.priority,
            "retrain": [[urn, status.value] for urn, status in self.retrain],
            "severity": self.severity.value,
            "source_assertion": self.source_assertion,
            "window": self.window.to_json(),
        }


@dataclass(frozen=True)
class PriorFields:
    """What Pareis last wrote of the ``incidentInfo`` fields a person may edit in DataHub (priority, assignees,
    stage), carried by Update and Resolve: where the write path can read the current aspect, a field that differs
    from this was changed by a person since, and is kept (DESIGN §3, human edits survive)."""

    priority: int | None
    assignees: tuple[str, ...] = ()
    stage: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"assignees": list(self.assignees), "priority": self.priority, "stage": self.stage}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PriorFields:
        """Inverse of :meth:`to_json`; TypeError/ValueError on a malformed value."""
        priority, stage = data.get("priority"), data.get("stage")
        if priority is not None and (not isinstance(priority, int) or isinstance(priority, bool)):
            raise TypeError(f"priority must be an integer or null, got {priority!r}")
        if stage is not None and not isinstance(stage, str):
            raise TypeError(f"stage must be a string or null, got {stage!r}")
        assignees = data.get("assignees") or []
        if not isinstance(assignees, list) or not all(isinstance(a, str) for a in assignees):
            raise TypeError(f"assignees must be a list of URNs, got {assignees!r}")
        return cls(priority, tuple(assignees), stage)


@dataclass(frozen=True)
class TimelineEntry:
    at_ms: int
    event: str
    subject: str
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"at_ms": self.at_ms, "detail": self.detail, "event": self.event, "subject": self.subject}


@dataclass(frozen=True)
class Postmortem:
    """The facts of a resolved incident, for the DataHub Document and the tickets' closing comment.

    ``time_to_detect_ms``: the blind window's length (first failure − last success), None when the data was
    never known good; ``time_to_heal_ms``: healed − first failure.
    """

    timeline: tuple[TimelineEntry, ...]
    time_to_detect_ms: int | None
    time_to_heal_ms: int
    contaminated_versions: tuple[str, ...]
    rollbacks: tuple[tuple[str, str | None], ...]
    failure_class: str
    text: str

    def to_json(self) -> dict[str, Any]:
        return {
            "contaminated_versions": list(self.contaminated_versions),
            "failure_class": self.failure_class,
            "rollbacks": [[group, urn] for group, urn in self.rollbacks],
            "text": self.text,
            "time_to_detect_ms": self.time_to_detect_ms,
            "time_to_heal_ms": self.time_to_heal_ms,
            "timeline": [entry.to_json() for entry in self.timeline],
        }


@dataclass(frozen=True)
class Open:
    """Raise the incident: write ``incidentInfo``, tag ``tags_add``, block retrains, open the tickets."""

    effect_id: str
    revision: int
    at_ms: int
    facts: IncidentFacts
    title: str
    description: str
    tags_add: tuple[str, ...]
    brief: Brief | None = field(default=None, compare=False, repr=False)
    """The brief ``title`` and ``description`` render (None: not kept, e.g. read back from JSON), for the tickets."""

    kind = "open"

    def to_json(self) -> dict[str, Any]:
        return {**_common(self), "tags_add": list(self.tags_add)}


@dataclass(frozen=True)
class Update:
    """Write only what changed: ``changed`` names the facts that moved; tag and retrain edits are deltas."""

    effect_id: str
    revision: int
    at_ms: int
    facts: IncidentFacts
    title: str
    description: str
    changed: tuple[str, ...]
    tags_add: tuple[str, ...]
    tags_remove: tuple[str, ...]
    retrain: tuple[tuple[str, RetrainStatus], ...]
    comment: str
    prior: PriorFields | None = None
    brief: Brief | None = field(default=None, compare=False, repr=False)
    """The brief ``title`` and ``description`` render (None: not kept, e.g. read back from JSON), for the tickets."""

    kind = "update"

    def to_json(self) -> dict[str, Any]:
        return {
            **_common(self),
            "changed": list(self.changed),
            "comment": self.comment,
            "prior": self.prior.to_json() if self.prior else None,
            "retrain_changes": [[urn, status.value] for urn, status in self.retrain],
            "tags_add": list(self.tags_add),
            "tags_remove": list(self.tags_remove),
        }


@dataclass(frozen=True)
class Resolve:
    """Resolve ``incidentInfo``, remove the tags, set the final retrain statuses, close the tickets, publish
    the postmortem."""

    effect_id: str
    revision: int
    at_ms: int
    facts: IncidentFacts
    title: str
    description: str
    tags_remove: tuple[str, ...]
    retrain: tuple[tuple[str, RetrainStatus], ...]
    postmortem: Postmortem
    prior: PriorFields | None = None
    brief: Brief | None = field(default=None, compare=False, repr=False)
    """The brief ``title`` and ``description`` render (None: not kept, e.g. read back from JSON), for the tickets."""

    kind = "resolve"

    def to_json(self) -> dict[str, Any]:
        return {
            **_common(self),
            "postmortem": self.postmortem.to_json(),
            "prior": self.prior.to_json() if self.prior else None,
            "retrain_changes": [[urn, status.value] for urn, status in self.retrain],
            "tags_remove": list(self.tags_remove),
        }


Intent = Open | Update | Resolve


def healed(intent: Intent) -> bool:
    """Whether the incident ``intent`` writes is healed (RESOLVED wherever it is written): a Resolve, or an Update of
    a resolved incident (its decisions re-decided after the heal, :func:`pareis.core.lifecycle.recheck`). An Open is
    never: even one whose window the runs show healed already (a backfill) is written ACTIVE, then resolved."""
    return isinstance(intent, Resolve) or (isinstance(intent, Update) and intent.facts.window.healed_ms is not None)


def _common(intent: Open | Update | Resolve) -> dict[str, Any]:
    return {
        "at_ms": intent.at_ms,
        "description": intent.description,
        "effect_id": intent.effect_id,
        "facts": intent.facts.to_json(),
        "incident": intent.facts.urn,
        "kind": intent.kind,
        "revision": intent.revision,
        "title": intent.title,
    }
