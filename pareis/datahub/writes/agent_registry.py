"""Pareis in DataHub's agent registry, written at start-up beside the definitions (DESIGN §3, issue 14).

* ``urn:li:aiAgent:pareis`` (its ``aiAgentInfo`` is a start-up definition, :mod:`pareis.datahub.writes.definitions`)
  gains ``aiAgentDependencies``: its skill and its tools;
* the Agent Skill (``skills/pareis-ml-incidents/SKILL.md``) as an ``agentSkill``: ``agentSkillInfo`` with the
  frontmatter's name and description, the body as ``instructions``, the repository path, the tools it requires;
* each MCP tool as an ``api`` entity: ``apiProperties`` and ``subTypes`` ``MCP_TOOL`` (acryl's
  ``datahub.api.entities.agent.api`` subtype);
* when the HTTP server's public URL is configured, the MCP server as a ``service``: ``serviceProperties`` listing
  the tools and ``mcpServerProperties`` (url, transport HTTP).

Idempotent like the definitions: full UPSERTs of values that depend only on the settings, the tool catalogue and
the skill file, with the definitions' constant stamps, so a restart writes byte-identical aspects. acryl's own
helpers (``datahub.api.entities.agent``) stamp the wall clock, which is why the aspects are built here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import yaml
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import (
    AgentSkillInfoClass,
    AIAgentDependenciesClass,
    ApiPropertiesClass,
    McpServerPropertiesClass,
    McpTransportClass,
    ServicePropertiesClass,
    SkillSourceRepositoryClass,
    SubTypesClass,
    _Aspect,
)
from datahub.metadata.urns import AgentSkillUrn, ApiUrn, ServiceUrn

from pareis.config import DatahubSettings
from pareis.datahub.writes.definitions import DEFINITIONS_AT_MS, definition_proposals
from pareis.datahub.writes.marks import stamp

MCP_TOOL_SUBTYPE = "MCP_TOOL"
SERVICE_ID = "pareis-mcp"


class NamedTool(Protocol):
    """What the registry needs of a tool (:class:`pareis.contracts.agent.ToolEntry` is one)."""

    @property
    def name(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def description(self) -> str: ...


@dataclass(frozen=True)
class Skill:
    """An Agent Skill as DataHub catalogues it: frontmatter ``name`` and ``description``, the body without the
    frontmatter, and its ``path`` inside the repository (``settings.repository_url``)."""

    name: str
    description: str
    instructions: str
    path: str

    @classmethod
    def read(cls, skill_md: Path, *, path: str) -> Skill:
        """Parse ``SKILL.md`` (YAML frontmatter between ``---`` lines, then the Markdown body).

        Raises ValueError when the file has no frontmatter or it lacks ``name`` or ``description``.
        """
        text = skill_md.read_text(encoding="utf-8")
        head, sep, body = text.removeprefix("---\n").partition("\n---\n")
        if not text.startswith("---\n") or not sep:
            raise ValueError(f"{skill_md}: no YAML frontmatter")
        meta = yaml.safe_load(head)
        if not isinstance(meta, dict) or not meta.get("name") or not meta.get("description"):
            raise ValueError(f"{skill_md}: frontmatter needs name and description")
        return cls(str(meta["name"]), " ".join(str(meta["description"]).split()), body.strip() + "\n", path)


def api_urn(tool: str) -> str:
    """The ``api`` entity of an MCP tool of Pareis's server: ``urn:li:api:pareis.<tool>``."""
    return str(ApiUrn(f"pareis.{tool}"))


def skill_urn(skill: Skill) -> str:
    return str(AgentSkillUrn(skill.name))


def service_urn() -> str:
    return str(ServiceUrn(SERVICE_ID))


def registry_mcps(
    settings: DatahubSettings, *, tools: Sequence[NamedTool], skill: Skill
) -> list[MetadataChangeProposalWrapper]:
    """The registry's proposals, tools before the skill, the skill before the agent that depends on it, and the
    service (only when ``settings.mcp_url``, the HTTP server's public ``…/mcp`` URL, is set) last. Every proposal
    carries Pareis's marks with the definitions' run id."""
    at = stamp(settings, DEFINITIONS_AT_MS)
    apis = [api_urn(tool.name) for tool in tools]
    aspects: list[tuple[str, _Aspect]] = []
    for tool, urn in zip(tools, apis, strict=True):
        aspects.append(
            (
                urn,
                ApiPropertiesClass(
                    name=tool.name, description=f"{tool.title}. {tool.description}", created=at, lastModified=at
                ),
            )
        )
        aspects.append((urn, SubTypesClass(typeNames=[MCP_TOOL_SUBTYPE])))
    repository = SkillSourceRepositoryClass(url=settings.repository_url, path=skill.path)
    aspects.append(
        (
            skill_urn(skill),
            AgentSkillInfoClass(
                name=skill.name,
                description=skill.description,
                instructions=skill.instructions,
                sourceRepository=repository,
                requiredTools=apis,
                created=at,
                lastModified=at,
            ),
        )
    )
    aspects.append((settings.agent_urn, AIAgentDependenciesClass(skills=[skill_urn(skill)], tools=apis)))
    if settings.mcp_url is not None:
        aspects.append(
            (
                service_urn(),
                ServicePropertiesClass(
                    displayName="Pareis MCP server",
                    description="Read-only MCP tools over Pareis's answers: incidents, blast radius, verdicts, "
                    "retrain gate, reliability and evidence.",
                    apis=apis,
                ),
            )
        )
        aspects.append(
            (service_urn(), McpServerPropertiesClass(url=settings.mcp_url, transport=McpTransportClass.HTTP))
        )
    return definition_proposals(settings, aspects)
