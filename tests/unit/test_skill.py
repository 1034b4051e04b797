"""The Agent Skill ``skills/pareis-ml-incidents``: valid for ``skills-ref`` (the Agent Skills reference
validator), its frontmatter carries the issue's trigger phrases, its references are one level deep and exist, and
every Pareis tool it names is in the server's ``tools/list`` (and every tool is named), while the DataHub tools
it names are DataHub's."""

from __future__ import annotations

import re
from pathlib import Path

from skills_ref.parser import parse_frontmatter
from skills_ref.validator import validate

from pareis.contracts.agent import SKILL_NAME, TOOL_NAMES, skill_dir
from tests.support.mcp_client import list_tools

TRIGGERS = (
    "trained on bad data",
    "can I retrain",
    "blast radius of this failing test",
    "which version do we roll back to",
    "Article 10 evidence",
)
DATAHUB_TOOLS = {
    "search",
    "get_entities",
    "list_schema_fields",
    "get_lineage",
    "get_lineage_paths_between",
    "get_dataset_queries",
}
"""Tools of DataHub's own MCP server (mcp-server-datahub's README) the skill sends questions to."""
TOOL_LIKE = re.compile(r"`((?:get|list|check|search)[a-z_]*)(?:\(|`)")


def skill_texts() -> dict[str, str]:
    files = [skill_dir() / "SKILL.md", *sorted((skill_dir() / "references").glob("*.md"))]
    return {str(f.relative_to(skill_dir())): f.read_text(encoding="utf-8") for f in files}


def test_the_reference_validator_accepts_the_skill() -> None:
    assert skill_dir().name == SKILL_NAME
    assert validate(skill_dir()) == []


def test_the_frontmatter_names_the_folder_and_carries_every_trigger_phrase() -> None:
    meta, body = parse_frontmatter((skill_dir() / "SKILL.md").read_text(encoding="utf-8"))
    assert meta["name"] == SKILL_NAME
    description = " ".join(str(meta["description"]).split())
    for phrase in TRIGGERS:
        assert phrase in description, phrase
    assert len(body.splitlines()) < 500


def test_references_are_one_level_deep_and_every_link_resolves() -> None:
    texts = skill_texts()
    for path in skill_dir().rglob("*"):
        assert len(path.relative_to(skill_dir()).parts) <= 2, path
    links = re.findall(r"\]\(([^)#]+)\)", texts["SKILL.md"])
    assert {"references/gate-checks.md", "references/verdicts.md", "references/dbt-snippets.md"} <= set(links)
    for link in links:
        assert (skill_dir() / link).is_file(), link
        assert Path(link).parent == Path("references"), link


def test_every_tool_the_skill_names_exists_and_every_tool_is_named() -> None:
    from pareis.mcp.server import build_server
    from tests.support.recorded import recorded_sources

    served = {t.name for t in list_tools(build_server(recorded_sources())).tools}
    assert served == set(TOOL_NAMES)
    named = {m for text in skill_texts().values() for m in TOOL_LIKE.findall(text)}
    pareis_named = named - DATAHUB_TOOLS
    assert pareis_named <= served, pareis_named - served
    assert served <= pareis_named, f"the skill never mentions {sorted(served - pareis_named)}"
    assert named & DATAHUB_TOOLS, "the skill says when to use DataHub's own tools"


def test_the_example_client_config_runs_datahubs_server_beside_pareis() -> None:
    import json

    example = Path(__file__).resolve().parents[2] / ".mcp.json.example"
    config = json.loads(example.read_text(encoding="utf-8"))["mcpServers"]
    assert config["datahub"]["args"] == ["mcp-server-datahub@latest"]
    assert {"DATAHUB_GMS_URL", "DATAHUB_GMS_TOKEN"} <= set(config["datahub"]["env"])
    local = config["pareis"]
    assert local["command"] == "pareis" and local["args"][0] == "mcp" and "--redis" in local["args"]
    remote = config["pareis-remote"]
    assert remote["url"].endswith("/mcp") and remote["headers"]["Authorization"].startswith("Bearer ")


def test_the_skill_recommends_what_the_decision_says_never_a_rollback_it_does_not_name() -> None:
    """The decision flow reads the decision first and maps each action to what to say; after a clean retrain the
    safe rollback is evidence, not advice (issue 32: an agent must not roll back a healthy model)."""
    text = " ".join((skill_dir() / "SKILL.md").read_text(encoding="utf-8").split())
    flow = text[text.index("## Decision flow") : text.index("## When to use DataHub")]
    assert flow.index("**Decision.**") < flow.index("**Blast radius.**") < flow.index("**Gate.**")
    for action in ("`ROLL_BACK`", "`PROMOTE`", "`RETRAIN`", "`NONE`"):
        assert action in flow, action
    assert "Never recommend a rollback when the action is `NONE` or `PROMOTE`" in flow
    assert "Recommend the `safe_rollback`" not in text
    verdicts = " ".join((skill_dir() / "references" / "verdicts.md").read_text(encoding="utf-8").split())
    assert "recommending the `safe_rollback` then would roll back a healthy model" in verdicts
