"""``pareis analyze``: the incident analysis of a dataset from its run history (DESIGN §2.2, §2.3).

The incident is found as the incidents role finds it: the dataset's incident key is its sibling class's
canonical member (:func:`pareis.roles.assertions.canonical`), its runs are those of every assertion of the class,
and its incidents are :func:`pareis.core.window.incidents` of them. Analysed is the latest incident (with
``--assertion``: the latest one that assertion failed in) — the open failing streak, else the most recent
resolved one — with the same inputs the role computes (blast radius per failing assertion, model versions from
the index) and :func:`pareis.core.intents.analyse`.

``--json`` prints the blast contract of ``pareis blast`` plus (keys sorted)::

    "incident": {urn, dataset, assertions, state: ACTIVE | RESOLVED, failed_rows},
    "window": {last_success_ms, first_failure_ms, healed_ms},
    "contamination": [{group, versions: [{urn, version, trained_at_ms, verdict}],   # oldest first
                       safe_rollback: {urn, version} | null}]                         # by group

Exit 2 with a one-line reason when the assertion (or no assertion of the dataset) ever failed, or the source can't
be read.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from pareis.analysis import incident_facts
from pareis.commands.blast import (
    JsonOption,
    MetadataOption,
    RedisOption,
    dump,
    evaluating,
    opened,
    print_blast,
)

if TYPE_CHECKING:
    from pareis.core.contamination import GroupContamination
    from pareis.core.intents import IncidentFacts


def analysis_answer(facts: IncidentFacts, assertion: str | None) -> dict[str, Any]:
    """The ``--json`` answer (lists sorted; the caller sorts keys)."""
    window = facts.window
    return {
        "assertion": assertion,
        "blast": facts.blast.to_json(),
        "incident": {
            "urn": facts.urn,
            "dataset": facts.dataset,
            "assertions": list(window.assertions),
            "state": "ACTIVE" if window.is_open else "RESOLVED",
            "failed_rows": window.failed_rows,
        },
        "window": {
            "last_success_ms": window.last_success_ms,
            "first_failure_ms": window.first_failure_ms,
            "healed_ms": window.healed_ms,
        },
        "contamination": [_group(g) for g in facts.contamination],
    }


def _group(group: GroupContamination) -> dict[str, Any]:
    rollback = group.safe_rollback
    return {
        "group": group.group,
        "versions": [
            {
                "urn": v.version.urn,
                "version": v.version.version,
                "trained_at_ms": v.version.trained_at_ms,
                "verdict": v.verdict.value,
            }
            for v in group.versions
        ],
        "safe_rollback": None if rollback is None else {"urn": rollback.urn, "version": rollback.version},
    }


def analyze(
    assertion: Annotated[str | None, typer.Option("--assertion", help="URN of an assertion that failed")] = None,
    dataset: Annotated[str | None, typer.Option("--dataset", help="URN of a dataset whose assertions failed")] = None,
    metadata: MetadataOption = None,
    redis_url: RedisOption = None,
    as_json: JsonOption = False,
) -> None:
    """Analyse a dataset's latest incident: blast radius, blind window, contaminated versions, safe rollbacks."""
    with evaluating("analyze"), opened(metadata, redis_url) as source:
        answer = analysis_answer(incident_facts(source, assertion=assertion, dataset=dataset), assertion)
    if as_json:
        print(dump(answer))
        return
    console = Console()
    incident, window = answer["incident"], answer["window"]
    head = Table(title=f"Incident {incident['urn']}", show_header=False, title_justify="left")
    head.add_column("what", style="bold")
    head.add_column("value", overflow="fold")
    head.add_row("dataset", incident["dataset"])
    head.add_row("state", incident["state"])
    head.add_row("assertions", "\n".join(incident["assertions"]))
    head.add_row("last success", _when(window["last_success_ms"]))
    head.add_row("first failure", _when(window["first_failure_ms"]))
    head.add_row("healed", _when(window["healed_ms"]))
    console.print(head)
    print_blast(console, ", ".join(incident["assertions"]), answer["blast"])
    versions = Table(title="Contamination", title_justify="left")
    for name in ("group", "version", "trained at", "verdict", "safe rollback"):
        versions.add_column(name, overflow="fold")
    for group in answer["contamination"]:
        rollback = group["safe_rollback"]
        for v in group["versions"]:
            is_rollback = rollback is not None and rollback["urn"] == v["urn"]
            label = v["version"] or v["urn"]
            versions.add_row(group["group"], label, _when(v["trained_at_ms"]), v["verdict"], "◀" if is_rollback else "")
    console.print(versions)


def _when(ms: int | None) -> str:
    if ms is None:
        return "—"
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
