"""The verdicts of every listed incident (DESIGN §2.3): what Mission Control's incident list shows beyond a row of
:func:`pareis.answers.incidents.incident_list` — per affected group, each version's verdict and the safe rollback.

For an ACTIVE incident the incident store holds (``sources.incidents``), the verdicts are what the incidents role
last published about it (``Published.contamination`` and ``rollback``; the role re-analyses an active incident when
its inputs change, as :func:`~pareis.answers.incidents.incident_list` relies on too), with each version's group,
label and training time read from the index in one batch. Any other incident — resolved, read from files, or one
the role has not published verdicts for — is analysed (:func:`pareis.answers.dossier.facts_of`), so a list of many
resolved incidents costs one analysis per resolved incident here, on top of the list's own.

JSON per incident URN: ``[<group_json of pareis analyze --json's "contamination">, …]`` (by group), equal to the
analysis's own ``contamination`` whenever the incidents role is current.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pareis.answers.incidents import IncidentSummary, group_json
from pareis.answers.sources import Sources

if TYPE_CHECKING:
    from pareis.core.graph import Memo
    from pareis.core.lifecycle import Published


def listed_verdicts(sources: Sources, rows: Sequence[IncidentSummary]) -> dict[str, list[dict[str, Any]]]:
    """Each row's contamination JSON, by incident URN (see the module docstring)."""
    from pareis.answers.dossier import facts_of
    from pareis.core.graph import Memo

    published: dict[str, Published] = {}
    if sources.incidents is not None:
        active = [r for r in rows if r.state == "ACTIVE"]
        stored = sources.incidents.get_many(sorted({r.dataset for r in active}))
        for r in active:
            state = stored.get(r.dataset)
            tracked = state.incident if state is not None and state.status.value == "ACTIVE" else None
            # An incident stored before Published held verdicts has none: analysed, unless no model is affected.
            if tracked is not None and tracked.urn == r.urn and (tracked.published.contamination or not r.models):
                published[r.urn] = tracked.published
    view = Memo(sources.lineage)
    out = _from_published(view, published)
    for r in rows:
        if r.urn not in out:
            out[r.urn] = [group_json(g) for g in facts_of(sources, r).contamination]
    return out


def _from_published(view: Memo, published: dict[str, Published]) -> dict[str, list[dict[str, Any]]]:
    """The contamination JSON of each published incident, its versions read from the index in one batch; an
    incident with a version the index no longer knows is left out (the caller analyses it)."""
    from pareis.core import catalog
    from pareis.core.contamination import GroupContamination, Verdict, VersionVerdict, age

    wanted = sorted({urn for p in published.values() for urn, _ in p.contamination})
    known = catalog.model_versions(view, wanted) if wanted else {}
    out: dict[str, list[dict[str, Any]]] = {}
    for urn, p in published.items():
        if any(v not in known for v, _ in p.contamination):
            continue
        in_blast = set(p.at_risk)
        groups: dict[str, list[VersionVerdict]] = {}
        for v, verdict in p.contamination:
            version = known[v]
            groups.setdefault(version.group or v, []).append(VersionVerdict(version, v in in_blast, Verdict(verdict)))
        rollbacks = dict(p.rollback)
        out[urn] = [
            group_json(
                GroupContamination(
                    group,
                    tuple(sorted(groups[group], key=lambda x: age(x.version))),
                    known.get(rollbacks.get(group) or ""),
                )
            )
            for group in sorted(groups)
        ]
    return out
