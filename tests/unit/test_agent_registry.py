"""Pareis in DataHub's agent registry (issue 14): the agent's dependencies, the Agent Skill, one ``api`` per MCP
tool and the MCP server as a ``service`` — valid for acryl-datahub's classes, deterministic, written at start-up
beside the definitions, and built from the real ``skills/pareis-ml-incidents/SKILL.md``."""

from __future__ import annotations

from pathlib import Path

import pytest
from datahub.emitter.aspect import ASPECT_MAP
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.emitter.mcp_builder import entity_supports_aspect
from datahub.metadata.schema_classes import (
    AgentSkillInfoClass,
    AIAgentDependenciesClass,
    ApiPropertiesClass,
    McpServerPropertiesClass,
    ServicePropertiesClass,
    SubTypesClass,
)

from pareis.compose.datahub import write_definitions
from pareis.config import DatahubSettings, Settings
from pareis.contracts.agent import SKILL_PATH, TOOL_NAMES, TOOLS, skill_dir
from pareis.datahub.writes.agent_registry import Skill, api_urn, registry_mcps
from pareis.datahub.writes.writer import MemoryWriter

SKILL = Skill.read(skill_dir() / "SKILL.md", path=SKILL_PATH)
WITH_SERVER = DatahubSettings(mcp_url="https://pareis.example.com/mcp", repository_url="https://git.example/pareis")
MCPS = registry_mcps(WITH_SERVER, tools=TOOLS, skill=SKILL)


def by(urn: str, aspect: str, mcps: list[MetadataChangeProposalWrapper] = MCPS) -> object:
    found = [m.aspect for m in mcps if m.entityUrn == urn and m.aspectName == aspect]
    assert len(found) == 1, (urn, aspect)
    return found[0]


@pytest.mark.parametrize("mcp", MCPS, ids=[f"{m.entityUrn}:{m.aspectName}" for m in MCPS])
def test_every_proposal_is_valid_for_acryl_and_fits_its_entity(mcp: MetadataChangeProposalWrapper) -> None:
    assert mcp.validate() and mcp.aspect is not None and mcp.aspect.validate()
    assert mcp.aspectName is not None
    assert entity_supports_aspect(mcp.entityType, ASPECT_MAP[mcp.aspectName]), (mcp.entityType, mcp.aspectName)
    assert MetadataChangeProposalWrapper.from_obj(mcp.to_obj()) == mcp
    marks = mcp.systemMetadata
    assert marks is not None and marks.runId == "pareis-definitions-v1" and marks.lastObserved == 1_735_689_600_000


def test_the_agent_depends_on_its_skill_and_every_tool() -> None:
    deps = by("urn:li:aiAgent:pareis", "aiAgentDependencies")
    assert isinstance(deps, AIAgentDependenciesClass)
    assert deps.skills == ["urn:li:agentSkill:pareis-ml-incidents"]
    assert deps.tools == [f"urn:li:api:pareis.{name}" for name in TOOL_NAMES]


def test_the_skill_is_the_skill_file_body_with_its_frontmatter_description() -> None:
    text = (skill_dir() / "SKILL.md").read_text(encoding="utf-8")
    info = by("urn:li:agentSkill:pareis-ml-incidents", "agentSkillInfo")
    assert isinstance(info, AgentSkillInfoClass)
    assert info.name == "pareis-ml-incidents"
    assert info.instructions is not None and info.instructions.startswith("# Pareis ML incidents")
    assert "---" not in info.instructions.splitlines()[0] and info.instructions.strip() in text
    assert info.description is not None and "can I retrain" in info.description and "\n" not in info.description
    assert info.sourceRepository is not None
    assert (info.sourceRepository.url, info.sourceRepository.path) == (
        "https://git.example/pareis",
        "skills/pareis-ml-incidents/SKILL.md",
    )
    assert info.requiredTools == [api_urn(name) for name in TOOL_NAMES]


def test_each_tool_is_an_mcp_tool_api() -> None:
    for tool in TOOLS:
        props = by(api_urn(tool.name), "apiProperties")
        assert isinstance(props, ApiPropertiesClass) and props.name == tool.name
        assert props.description is not None and tool.description in props.description
        sub = by(api_urn(tool.name), "subTypes")
        assert isinstance(sub, SubTypesClass) and sub.typeNames == ["MCP_TOOL"]


def test_the_server_is_a_service_only_when_its_url_is_configured() -> None:
    props = by("urn:li:service:pareis-mcp", "serviceProperties")
    assert isinstance(props, ServicePropertiesClass) and props.apis == [api_urn(n) for n in TOOL_NAMES]
    server = by("urn:li:service:pareis-mcp", "mcpServerProperties")
    assert isinstance(server, McpServerPropertiesClass)
    assert (server.url, server.transport) == ("https://pareis.example.com/mcp", "HTTP")
    without = registry_mcps(DatahubSettings(), tools=TOOLS, skill=SKILL)
    assert not [m for m in without if m.entityType == "service"]
    assert len(without) == len(MCPS) - 2


def test_building_again_is_byte_identical() -> None:
    assert [m.to_obj() for m in registry_mcps(WITH_SERVER, tools=TOOLS, skill=SKILL)] == [m.to_obj() for m in MCPS]


def test_start_up_writes_the_registry_after_the_definitions_into_the_writer() -> None:
    writer = MemoryWriter()
    write_definitions(Settings(datahub=WITH_SERVER), writer)
    written = [(m.entityUrn, m.aspectName) for m in writer.proposals]
    assert written.index(("urn:li:aiAgent:pareis", "aiAgentInfo")) < written.index(
        ("urn:li:aiAgent:pareis", "aiAgentDependencies")
    )
    assert written[-len(MCPS) :] == [(m.entityUrn, m.aspectName) for m in MCPS]


def test_a_skill_file_without_frontmatter_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "SKILL.md"
    bad.write_text("# no frontmatter\n", encoding="utf-8")
    with pytest.raises(ValueError, match="frontmatter"):
        Skill.read(bad, path="skills/x/SKILL.md")
