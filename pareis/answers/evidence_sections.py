"""The sections of the evidence pack (:mod:`pareis.answers.evidence`): what the metadata shows for each paragraph
of Regulation (EU) 2024/1689 Article 10, Annex IV 2(d)/2(g) and Article 20, as :class:`Section` values built from
the protect survey (:mod:`pareis.core.protect`), the lineage view, the run history and the past incidents."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pareis.answers.gate_reads import upstream_assertions
from pareis.core import catalog
from pareis.core.contamination import contamination
from pareis.core.graph import Attr, LineageView, Memo, Query, Rel
from pareis.core.protect import Survey
from pareis.core.runs import ResultType

if TYPE_CHECKING:
    from pareis.answers.sources import Sources
    from pareis.core.impact import BlastRadius

NOT_ASSESSED = "not_assessed"
ASSESSED = "assessed"
PARTIAL = "partial"


@dataclass(frozen=True)
class Section:
    """One paragraph (or point) of the Regulation, and what the metadata shows for it."""

    id: str
    title: str
    requirement: str
    status: str
    summary: str
    facts: Mapping[str, Any] = field(default_factory=dict)
    missing: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "requirement": self.requirement,
            "status": self.status,
            "summary": self.summary,
            "facts": dict(self.facts),
            "missing": list(self.missing),
        }


def iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def not_assessed(id_: str, title: str, requirement: str, why: str) -> Section:
    return Section(id_, title, requirement, NOT_ASSESSED, why[0].upper() + why[1:])


def _dataset_upstreams(view: LineageView, datasets: Sequence[str]) -> dict[str, frozenset[str]]:
    (ups,) = view.lookup([Query(Rel.DATASET, sorted(datasets), True)])
    return dict(ups)


def origin(view: LineageView, s: Survey, infos: Mapping[str, Any], runs: Mapping[str, Any]) -> Section:
    members = sorted(s.class_of)
    ups = _dataset_upstreams(view, members)
    origins = sorted(key for key, cls in s.classes.items() if not any(ups[m] - set(cls.members) for m in cls.members))
    features = [
        {
            "model": m,
            "group": info.group,
            "feature": f,
            "sources": sorted(s.upstream[m].sources[f]),
            "removed_sources": sorted(s.upstream[m].removed_sources[f]),
        }
        for m, info in sorted(infos.items())
        for f in info.features
    ]
    training = [
        {"model": m, "run": r, "started": iso(runs[r].started_ms), "inputs": list(runs[r].inputs)}
        for m, info in sorted(infos.items())
        for r in info.training_runs
    ]
    columns = sorted({c for up in s.upstream.values() for c in up.columns})
    missing = []
    if not columns and not any(up.table_datasets for up in s.upstream.values()):
        missing.append("no lineage: no feature source column and no training-run input is known for this model")
    for m, info in sorted(infos.items()):
        up = s.upstream[m]
        for f in up.removed_features:
            missing.append(f"{f} (listed by {m}) is removed")
        for row in features:
            if row["model"] == m and row["removed_sources"]:
                missing.append(f"{row['feature']}: source removed ({', '.join(row['removed_sources'])})")
        if not info.features:
            missing.append(f"{m} lists no features")
        if not info.training_runs:
            missing.append(f"{m} has no training run recorded")
    summary = (
        f"{len(s.classes)} upstream dataset(s) (sibling classes), {len(columns)} column(s) feeding the model, "
        f"{len(origins)} origin dataset(s)."
    )
    return Section(
        "10(2)(b)",
        "Data collection processes and the origin of data",
        "… data collection processes and the origin of data, and in the case of personal data, the original purpose "
        "of the data collection.",
        PARTIAL if missing else ASSESSED,
        summary + " The original purpose of personal data collection is not assessed by Pareis.",
        {
            "features": features,
            "training_runs": training,
            "origin_datasets": origins,
            "datasets": [{"dataset": key, "siblings": list(cls.members)} for key, cls in sorted(s.classes.items())],
            "columns": columns,
        },
        tuple(missing),
    )


def preparation(view: LineageView, s: Survey, attrs: Mapping[str, Mapping[str, str]]) -> Section:
    members = sorted(s.class_of)
    ups = _dataset_upstreams(view, members)
    (writers,) = view.lookup([Query(Rel.WRITES, members, True)])
    steps = []
    for m in members:
        unique_id = attrs[m].get(Attr.DBT_UNIQUE_ID)
        if unique_id is None or not unique_id.startswith(("model.", "snapshot.", "seed.")):
            continue
        steps.append({"dbt_node": unique_id, "dataset": m, "reads": sorted(ups[m])})
    jobs = sorted({j for m in members for j in writers[m]})
    missing = [] if steps or jobs else ["no dbt model or job is known between the sources and the features"]
    return Section(
        "10(2)(c)",
        "Data-preparation processing operations",
        "… relevant data-preparation processing operations, such as annotation, labelling, cleaning, updating, "
        "enrichment and aggregation.",
        ASSESSED if steps or jobs else PARTIAL,
        f"{len(steps)} dbt transformation(s) and {len(jobs)} job(s) between the sources and the features.",
        {"dbt_models": steps, "jobs": [{"job": j} for j in jobs]},
        tuple(missing),
    )


def quantity(s: Survey, attrs: Mapping[str, Mapping[str, str]]) -> Section:
    rows = []
    missing = []
    for key, cls in sorted(s.classes.items()):
        profile = None
        for m in cls.members:
            raw = attrs[m].get(Attr.PROFILE)
            if raw:
                profile = (m, json.loads(raw))
                break
        columns = len(cls.paths)
        if profile is None:
            rows.append({"dataset": key, "rows": None, "columns": columns, "profiled_at": None, "profiled_fields": 0})
            missing.append(f"no profile of {key} in DataHub")
        else:
            m, p = profile
            rows.append(
                {
                    "dataset": key,
                    "rows": p.get("rows"),
                    "columns": columns,
                    "profiled_at": iso(p.get("time_ms")),
                    "profiled_fields": len(p.get("fields", {})),
                }
            )
    return Section(
        "10(2)(e)",
        "Availability, quantity and suitability of the data sets",
        "… an assessment of the availability, quantity and suitability of the data sets that are needed.",
        PARTIAL if missing else ASSESSED,
        f"{len(rows) - len(missing)} of {len(rows)} upstream dataset(s) have a profile (row count, field statistics). "
        "Suitability for the intended purpose is not assessed by Pareis.",
        {"datasets": rows},
        tuple(missing),
    )


def gaps(answer: Any) -> Section:
    gaps = [
        {
            "column": g.column,
            "models": list(g.models),
            "features": list(g.features),
            "matches_past_incident": g.matches_past_incident,
            "tests": [t.name for t in g.tests],
        }
        for g in answer.gaps
    ]
    return Section(
        "10(2)(h)",
        "Data gaps or shortcomings and how they can be addressed",
        "… the identification of relevant data gaps or shortcomings that prevent compliance with this Regulation, "
        "and how those gaps and shortcomings can be addressed.",
        ASSESSED,
        f"{len(gaps)} untested column(s) feed the model, ranked (past-incident matches first, then exposure); each "
        "comes with the dbt tests that would close it.",
        {"gaps": gaps, "dbt_schema_yml": answer.yaml},
    )


def errors(
    view: Memo,
    sources: Sources,
    s: Survey,
    answer: Any,
    incidents: Sequence[tuple[Any, BlastRadius]],
    versions: Sequence[str],
    at_ms: int,
) -> Section:
    checked = upstream_assertions(view, sources.runs, s.upstream.values())
    assertions = []
    for key, cls in sorted(s.classes.items()):
        names = {a for a, on in checked.items() if set(on.datasets) & set(cls.members)}
        for a in sorted(names):
            runs = [r for r in sources.runs.runs(a, None, at_ms) if r.counts]
            failures = [r for r in runs if r.result is ResultType.FAILURE]
            assertions.append(
                {
                    "assertion": a,
                    "dataset": key,
                    "runs": len(runs),
                    "passed": len(runs) - len(failures),
                    "failed": len(failures),
                    "latest": runs[-1].result.value if runs else None,
                    "latest_failed_rows": failures[-1].failed_rows if failures else None,
                }
            )
    reached = set(versions)
    history = []
    for summary, radius in incidents:
        hit = sorted(reached & {m.urn for m in radius.models})
        if not hit:
            continue
        history.append(
            {
                "incident": summary.urn,
                "dataset": summary.dataset,
                "state": summary.state,
                "last_success": iso(summary.last_success_ms),
                "first_failure": iso(summary.first_failure_ms),
                "healed": iso(summary.healed_ms),
                "failed_rows": summary.failed_rows,
                "versions_reached": hit,
            }
        )
    missing = [] if assertions else ["no assertion checks any upstream dataset"]
    return Section(
        "10(3)",
        "Relevant, representative, free of errors and complete",
        "Training, validation and testing data sets shall be relevant, sufficiently representative, and to the best "
        "extent possible, free of errors and complete in view of the intended purpose.",
        PARTIAL if missing else ASSESSED,
        f"{len(assertions)} assertion(s) on the upstream data, {len(history)} incident(s) reached these versions. "
        "Representativeness is not assessed by Pareis.",
        {
            "scores": [_score_row(sc) for sc in (*answer.models, *answer.datasets)],
            "assertions": assertions,
            "incidents": history,
        },
        tuple(missing),
    )


def datasheet(s: Survey, infos: Mapping[str, Any], runs: Mapping[str, Any], attrs: Mapping[str, Any]) -> Section:
    sheets = []
    for key, cls in sorted(s.classes.items()):
        types: dict[str, str] = {}
        for m in cls.members:
            raw = attrs[m].get(Attr.SCHEMA_TYPES)
            if raw:
                types.update(json.loads(raw))
        feeding = sorted(cls.feeding)
        sheets.append(
            {
                "dataset": key,
                "siblings": list(cls.members),
                "dbt_node": next(
                    (attrs[m].get(Attr.DBT_UNIQUE_ID) for m in cls.members if attrs[m].get(Attr.DBT_UNIQUE_ID)), None
                ),
                "columns": len(cls.paths),
                "columns_feeding_models": feeding,
                "column_types": {p: types.get(p) for p in feeding},
                "tested_columns": sorted(cls.tested & cls.feeding),
            }
        )
    training = [
        {"model": m, "run": r, "started": iso(runs[r].started_ms), "inputs": list(runs[r].inputs)}
        for m, info in sorted(infos.items())
        for r in info.training_runs
    ]
    return Section(
        "Annex IV 2(d), 2(g)",
        "Datasheets of the training data; validation and testing data",
        "Annex IV 2(d): datasheets describing the training data sets, their provenance, scope and main "
        "characteristics; 2(g): the validation and testing procedures and data used.",
        PARTIAL,
        f"{len(sheets)} datasheet(s) and {len(training)} training run(s). Validation and testing metrics are not "
        "assessed by Pareis.",
        {"datasheets": sheets, "training_runs": training},
        () if training else ("no training run is recorded",),
    )


def corrective(
    view: LineageView, incidents: Sequence[tuple[Any, BlastRadius]], versions: Sequence[str], at_ms: int
) -> Section:
    """Article 20 at ``at_ms``: the verdicts over the versions trained by then (a later version does not exist yet
    for a pack of that time, and an incident still open then would otherwise count it as contaminated)."""
    reached = set(versions)
    actions = []
    for summary, radius in incidents:
        affected = [m for m in radius.models if m.urn in reached or m.group in {g for g in _groups(view, versions)}]
        if not affected:
            continue
        groups = sorted({m.group for m in radius.models if m.group})
        trained = {
            g: tuple(v for v in vs if v.trained_at_ms is None or v.trained_at_ms <= at_ms)
            for g, vs in catalog.versions_by_group(view, groups).items()
        }
        verdicts = contamination(radius.models, trained, summary.last_success_ms, summary.healed_ms)
        for g in verdicts:
            if g.group not in _groups(view, versions):
                continue
            actions.append(
                {
                    "incident": summary.urn,
                    "group": g.group,
                    "contaminated_versions": [v.urn for v in g.contaminated],
                    "safe_rollback": None if g.safe_rollback is None else g.safe_rollback.urn,
                    "retrain_blocked_from": iso(summary.first_failure_ms),
                    "retrain_unblocked_at": iso(summary.healed_ms),
                    "resolution": "healed" if summary.healed_ms is not None else "open",
                    "blocked_after_heal": [v.urn for v in g.contaminated],
                }
            )
    return Section(
        "Article 20",
        "Corrective actions and duty of information",
        "Providers who consider that a high-risk AI system is not in conformity shall immediately take the "
        "necessary corrective actions (bring it into conformity, withdraw, disable or recall it).",
        ASSESSED,
        f"{len(actions)} corrective action record(s): contaminated versions, rollbacks, retrain blocks and their "
        "resolution.",
        {"actions": actions},
    )


def _score_row(score: Any) -> dict[str, Any]:
    """A score as one table row: the entity, the score, and each component's value (weights in the header)."""
    row: dict[str, Any] = {"entity": score.urn, "score": score.score}
    for c in score.components:
        row[f"{c.name} (×{c.weight:g})"] = c.value
    return row


def _groups(view: LineageView, versions: Sequence[str]) -> set[str]:
    return {i.group for i in catalog.models(view, versions).values() if i.group}
