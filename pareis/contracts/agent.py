"""Pareis as an agent, as plain data: the MCP server's tools (names, titles, descriptions, in ``tools/list``
order) and where its Agent Skill lives.

Plain data in the shared contracts (standard library only) so that the MCP server (:mod:`pareis.mcp.server`, a
surface) and the agent registry the composition root writes into DataHub (:mod:`pareis.datahub.writes.agent_registry`)
describe the same tools with the same words. Names are snake_case and verb-first, as DataHub's own MCP server
names its tools.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

SERVER_NAME: Final = "pareis"
SKILL_NAME: Final = "pareis-ml-incidents"
SKILL_PATH: Final = f"skills/{SKILL_NAME}/SKILL.md"
"""The skill's path inside the repository, as DataHub's ``agentSkillInfo.sourceRepository.path`` names it."""
EVIDENCE_RESOURCE: Final = "pareis://evidence/{model_urn}"


def skill_dir() -> Path:
    """The Agent Skill's folder: the installed package's copy (``pareis/_skills``, put there by ``setup.py``), else
    the source checkout's top-level ``skills/`` (an editable install, the tests)."""
    package = Path(__file__).resolve().parents[1]
    packaged = package / "_skills" / SKILL_NAME
    return packaged if packaged.is_dir() else package.parent / "skills" / SKILL_NAME


@dataclass(frozen=True)
class ToolEntry:
    """One tool: ``name`` (the MCP tool name), ``title`` (for people) and ``description`` (for agents)."""

    name: str
    title: str
    description: str


TOOLS: Final = (
    ToolEntry(
        "list_incidents",
        "List ML data incidents",
        "Start here: what is broken now. Pareis incidents (a failing data-quality assertion turned into an ML "
        "incident), active first, then newest first, each with its decision per affected model group (action "
        "ROLL_BACK, PROMOTE, RETRAIN or NONE, the target version, what serves, and why). Filter by state (ACTIVE, "
        "RESOLVED or ALL), severity, the failing dataset (a dbt node and its warehouse table are the same), a model "
        "(version or group) in the blast radius, or a time (at). Paged: offset, max_results; the answer says "
        "returned, total and has_more. The same rows as `pareis incidents --json`.",
    ),
    ToolEntry(
        "get_incident",
        "Get an incident's analysis",
        "One incident in depth (give its URN, or a dataset or assertion for its latest incident): first the decision "
        "per model group (`decisions`: act on `action` and `target`, never on the evidence alone), then the blind "
        "window (last success, first failure, healed), every version's verdict, the safe rollback per group, the "
        "owners and the tickets. The blast radius's lists are paged (offset, max_results; `totals` gives their "
        "lengths): use get_blast_radius for a column's or a dataset's radius without an incident. The same JSON as "
        "`pareis analyze --json` when one page holds the radius.",
    ),
    ToolEntry(
        "get_blast_radius",
        "Get the column-precision blast radius",
        "What a failing assertion, a column (schemaField URN, or a dataset URN plus a column name) or a whole dataset "
        "poisons, in one call: affected columns, datasets, features and models, each model with its poisoned "
        "features, ratio and severity. Use it before a change, or for impact without an incident. The same JSON as "
        "`pareis blast --json`, its lists paged by offset and max_results.",
    ),
    ToolEntry(
        "get_model_verdicts",
        "Get a model's decision and version verdicts",
        "For a model version or model group: first what to do now (`decision`: ROLL_BACK, PROMOTE, RETRAIN or NONE, "
        "over every incident that reached the group, knowing which version serves), then every version's training "
        "time and verdict (CONTAMINATED, CLEAN or UNKNOWN) in each incident that reached it, and the safe rollback. "
        "Use it when the question is about a model rather than an incident. The same JSON as `pareis analyze "
        "--model URN --json`.",
    ),
    ToolEntry(
        "check_retrain_gate",
        "Check the retrain gate",
        "May this model (version, or a group's newest version) be retrained or promoted now (or at `at`)? GO or "
        "NO-GO with ten checks, each PASS, WARN or FAIL with a reason and evidence URNs, the incidents that reach "
        "it and the safe rollback. Use it before retraining or promoting. Exactly the object `pareis gate --json` "
        "prints.",
    ),
    ToolEntry(
        "get_reliability",
        "Get reliability and test gaps",
        "The reliability score (0-100) of a dataset or model with its published components, and the ranked gaps: "
        "untested columns that feed models, each with dbt tests to paste into schema.yml. Use it to prevent the "
        "next incident.",
    ),
    ToolEntry(
        "get_evidence_pack",
        "Get the Article 10 evidence pack",
        "The EU AI Act Article 10 (data and data governance) evidence pack of a model, regenerated from live "
        "metadata. format summary (default): each paragraph's status and summary; format full: the whole pack as "
        "Markdown and JSON (tens of kilobytes: ask for it only to hand the pack over). Also the resource "
        "pareis://evidence/{model_urn}. Not legal advice.",
    ),
)
TOOL_NAMES: Final = tuple(tool.name for tool in TOOLS)


def tool(name: str) -> ToolEntry:
    """The entry named ``name`` (KeyError when there is none)."""
    for entry in TOOLS:
        if entry.name == name:
            return entry
    raise KeyError(name)
