"""The EU AI Act Article 10 evidence pack of a model (DESIGN §2.5), regenerated on demand from live metadata.

:func:`evidence_pack` answers ``pareis evidence`` (and the MCP tool ``get_evidence_pack``): a typed value whose
JSON (:meth:`EvidencePack.to_json`) is the source of the Markdown and HTML renderings
(:mod:`pareis.answers.evidence_render`). It is organised paragraph by paragraph of Regulation (EU) 2024/1689
Article 10 — every paragraph and point is present, those Pareis cannot assess marked ``not_assessed`` — plus the
Annex IV 2(d)/2(g) datasheet fields and the Article 20 corrective actions. What is missing from the metadata (no
lineage, no profile, no assertion) is said in the section's ``missing`` list rather than failing.

Facts come from the lineage index (model versions, features, sources, upstream datasets, dbt nodes, jobs, training
runs, profiles), the run history (assertion runs, incidents) and :func:`pareis.answers.reliability.protect` (scores,
ranked gaps with their dbt tests). Not legal advice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pareis.answers import time_travel
from pareis.answers.evidence_sections import (
    Section,
    corrective,
    datasheet,
    errors,
    gaps,
    iso,
    not_assessed,
    origin,
    preparation,
    quantity,
)
from pareis.core import catalog
from pareis.core.graph import Memo, union
from pareis.core.protect import survey

if TYPE_CHECKING:
    from pareis.answers.incidents import IncidentSummary
    from pareis.answers.sources import Sources
    from pareis.core.impact import BlastRadius

__all__ = ["EvidencePack", "Section", "evidence_pack"]

REGULATION = "Regulation (EU) 2024/1689 (Artificial Intelligence Act)"
APPLICABLE_DATES = (
    {"date": "2027-12-02", "applies_to": "high-risk AI systems listed in Annex III"},
    {"date": "2028-08-02", "applies_to": "high-risk AI systems covered by Annex I (Union harmonisation legislation)"},
)
AMENDMENT = "Application dates as amended by the 2026 Digital Omnibus on AI; the text of Article 10 is unchanged by it."
DISCLAIMER = (
    "Not legal advice. This pack collects technical evidence from metadata; whether it satisfies the Regulation is "
    "for the provider and its advisers to assess."
)


@dataclass(frozen=True)
class EvidencePack:
    """The pack: a header and the sections in the order of the Regulation."""

    model: str
    versions: tuple[str, ...]
    generated_at_ms: int
    origin: str
    sections: tuple[Section, ...]

    @property
    def file_stem(self) -> str:
        """``evidence-<model name>``: the model URN's name part, made safe for a file name."""
        inner = self.model[self.model.find("(") + 1 : -1].split(",")
        name = inner[1] if len(inner) >= 3 else self.model.rsplit(":", 1)[-1]
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)
        return f"evidence-{safe}"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "pareis.evidence_pack.v1",
            "header": {
                "model": self.model,
                "versions": list(self.versions),
                "generated_at_ms": self.generated_at_ms,
                "generated_at": iso(self.generated_at_ms),
                "generated_from": self.origin,
                "time_travel": time_travel.field(time_travel.PROTECT),
                "regulation": REGULATION,
                "article": "Article 10 — Data and data governance",
                "applicable_dates": [dict(d) for d in APPLICABLE_DATES],
                "amendment": AMENDMENT,
                "disclaimer": DISCLAIMER,
            },
            "sections": [s.to_json() for s in self.sections],
        }


def evidence_pack(sources: Sources, model: str, at_ms: int) -> EvidencePack:
    """The pack of ``model`` (a version, or a group: every live version) at ``at_ms``.

    CannotEvaluate for a model the index does not know; a known model without lineage gives a pack whose sections
    say what is missing.
    """
    from pareis.answers.reliability import past_incidents, protect
    from pareis.answers.versions import model_versions

    view = Memo(sources.lineage)
    versions = model_versions(view, model, at_ms)
    s = survey(view, models=versions)
    answer = protect(sources, at_ms=at_ms, model=model)
    incidents = as_of(past_incidents(sources, view, at_ms), at_ms)
    infos = catalog.models(view, versions)
    runs = catalog.runs(view, union({m: frozenset(i.training_runs) for m, i in infos.items()}))
    members = sorted(s.class_of)
    attrs = view.attributes(members)
    sections = [
        not_assessed(
            "10(2)(a)",
            "Relevant design choices",
            "Data governance and management practices shall concern the relevant design choices.",
            "design choices are not recorded in the metadata Pareis reads.",
        ),
        origin(view, s, infos, runs),
        preparation(view, s, attrs),
        not_assessed(
            "10(2)(d)",
            "Formulation of assumptions",
            "… the formulation of assumptions, in particular with respect to the information the data are supposed "
            "to measure and represent.",
            "assumptions are a matter for the provider's documentation.",
        ),
        quantity(s, attrs),
        not_assessed(
            "10(2)(f)",
            "Examination in view of possible biases",
            "… examination in view of possible biases likely to affect health and safety, fundamental rights or "
            "lead to discrimination.",
            "bias examination needs the data's content and context, which Pareis does not inspect.",
        ),
        not_assessed(
            "10(2)(g)",
            "Measures to detect, prevent and mitigate biases",
            "… appropriate measures to detect, prevent and mitigate possible biases identified under point (f).",
            "bias mitigation is outside what lineage and data-quality metadata show.",
        ),
        gaps(answer),
        errors(view, sources, s, answer, incidents, versions, at_ms),
        not_assessed(
            "10(4)",
            "Specific geographical, contextual, behavioural or functional setting",
            "Data sets shall take into account the characteristics particular to the setting of intended use.",
            "the intended setting of use is not in the metadata.",
        ),
        not_assessed(
            "10(5)",
            "Special categories of personal data for bias detection",
            "Exceptional processing of special categories of personal data to ensure bias detection and correction.",
            "whether special categories of personal data are processed, and under which safeguards, is a legal "
            "assessment.",
        ),
        not_assessed(
            "10(6)",
            "Systems not using training",
            "For systems not using techniques involving the training of models, paragraphs 2 to 5 apply only to the "
            "testing data sets.",
            "whether the system trains models is for the provider to state; the versions listed here were trained.",
        ),
        datasheet(s, infos, runs, attrs),
        corrective(view, incidents, versions, at_ms),
    ]
    return EvidencePack(model, tuple(versions), at_ms, sources.origin, tuple(sections))


def as_of(
    incidents: Sequence[tuple[IncidentSummary, BlastRadius]], at_ms: int
) -> list[tuple[IncidentSummary, BlastRadius]]:
    """The incidents as they stood at ``at_ms``: one healed later (the run history may already hold the repair when
    the pack is generated for an earlier time) is still ACTIVE then, with no heal — so 10(3) and Article 20 never
    show a resolution the pack's own time has not reached."""
    return [
        (replace(summary, state="ACTIVE", healed_ms=None), radius)
        if summary.healed_ms is not None and summary.healed_ms > at_ms
        else (summary, radius)
        for summary, radius in incidents
    ]
