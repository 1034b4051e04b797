"""The MCP tools: parse the arguments, ask the answers layer, return its JSON as a typed tool result.

Every tool is read-only and reads only the :class:`~pareis.answers.sources.Sources` it was built over. A tool's
``structuredContent`` is the answer's ``to_json()`` (paged where it is a list) and its text content is the same
object as :func:`pareis.answers.render.dump` prints it, so a client that reads either sees what ``pareis … --json``
prints. A question the input cannot answer, or a source that is down, is a tool error whose text is the one-line
reason; the SDK reports anything else as an unexpected error.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent
from pydantic import Field

from pareis.answers.incidents import IncidentAnswer
from pareis.answers.render import dump
from pareis.answers.sources import CannotEvaluate, Sources, SourceUnavailable
from pareis.mcp import results

T = TypeVar("T")
MAX_PAGE = 500
"""The largest ``max_results`` a caller may ask for: a page stays a few hundred kilobytes at most."""

Urn = Annotated[str, Field(description="a DataHub URN", min_length=8)]
Offset = Annotated[int, Field(ge=0, description="skip this many items (paging)")]


def result(obj: Mapping[str, Any]) -> CallToolResult:
    """``obj`` as a tool result: structured, and as the CLI's JSON text."""
    return CallToolResult(content=[TextContent(type="text", text=dump(obj))], structured_content=dict(obj))


def window(items: Sequence[T], offset: int, max_results: int) -> list[T]:
    return list(items[offset : offset + max_results])


def paging(total: int, returned: int, offset: int, max_results: int) -> dict[str, Any]:
    """The paging fields of a list answer (DataHub's lineage tool's, in snake_case)."""
    return {
        "offset": offset,
        "max_results": max_results,
        "returned": returned,
        "total": total,
        "has_more": offset + returned < total,
    }


@contextmanager
def answering() -> Iterator[None]:
    """Turn the answers layer's refusals into tool errors with a one-line reason."""
    from pareis.compose.sources import reading

    try:
        with reading():
            yield
    except CannotEvaluate as exc:
        raise ToolError(_one_line(exc)) from exc
    except SourceUnavailable as exc:
        raise ToolError(f"source unavailable: {_one_line(exc)}") from exc


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def entity_type(urn: str) -> str:
    """``dataset`` for ``urn:li:dataset:(…)``; ToolError for something that is not a URN."""
    parts = urn.split(":", 3)
    if len(parts) < 4 or parts[:2] != ["urn", "li"] or not parts[2]:
        raise ToolError(f"{urn!r} is not a DataHub URN")
    return parts[2]


class Tools:
    """The tools over one :class:`Sources`; each method is one MCP tool (see :mod:`pareis.model.agent`)."""

    def __init__(self, sources: Sources) -> None:
        self.sources = sources

    def list_incidents(
        self,
        state: Annotated[
            Literal["ACTIVE", "RESOLVED", "ALL"], Field(description="ACTIVE (still failing), RESOLVED or ALL")
        ] = "ACTIVE",
        dataset_urn: Annotated[str | None, Field(description="only incidents of this failing dataset")] = None,
        model_urn: Annotated[
            str | None, Field(description="only incidents whose blast radius reaches this model version or group")
        ] = None,
        offset: Offset = 0,
        max_results: Annotated[int, Field(ge=1, le=MAX_PAGE, description="page size")] = 20,
    ) -> Annotated[CallToolResult, results.IncidentList]:
        from pareis.answers.incidents import incident_list

        with answering():
            found = incident_list(self.sources)
            versions = self._versions(model_urn) if model_urn is not None else None
        chosen = [
            s
            for s in found
            if (state == "ALL" or s.state == state)
            and (dataset_urn is None or s.dataset == dataset_urn)
            and (versions is None or not versions.isdisjoint(s.models))
        ]
        page = window(chosen, offset, max_results)
        return result({"incidents": [s.to_json() for s in page], **paging(len(chosen), len(page), offset, max_results)})

    def get_incident(
        self, urn: Annotated[str, Field(description="an incident URN, or a dataset (its latest incident)")]
    ) -> Annotated[CallToolResult, results.IncidentResult]:
        from pareis.answers.incidents import analysis

        kind = entity_type(urn)
        with answering():
            if kind == "incident":
                answer = self._incident(urn)
            elif kind == "dataset":
                answer = analysis(self.sources, dataset=urn)
            elif kind == "assertion":
                answer = analysis(self.sources, assertion=urn)
            else:
                raise ToolError(f"{urn} is a {kind}: give an incident, dataset or assertion URN")
        return result(answer.to_json())

    def get_blast_radius(
        self,
        urn: Annotated[str, Field(description="a failing assertion, a column (schemaField) or a dataset URN")],
        column: Annotated[
            str | None, Field(description="with a dataset URN: one column's field path (then that column's radius)")
        ] = None,
        offset: Offset = 0,
        max_results: Annotated[int, Field(ge=1, le=MAX_PAGE, description="page size of every list")] = 50,
    ) -> Annotated[CallToolResult, results.BlastRadiusResult]:
        from pareis.answers.blast import blast

        kind = entity_type(urn)
        if column is not None and kind != "dataset":
            raise ToolError("column needs a dataset URN")
        with answering():
            if kind == "assertion":
                answer = blast(self.sources, assertion=urn)
            elif kind == "schemaField":
                answer = blast(self.sources, columns=[urn])
            elif kind == "dataset" and column is not None:
                answer = blast(self.sources, columns=[f"urn:li:schemaField:({urn},{column})"])
            elif kind == "dataset":
                answer = blast(self.sources, dataset=urn)
            else:
                raise ToolError(f"{urn} is a {kind}: give an assertion, schemaField or dataset URN")
        obj = answer.to_json()
        radius = obj["blast"]
        lists = ("columns", "datasets", "features", "models")
        totals = {name: len(radius[name]) for name in lists}
        paged = {name: window(radius[name], offset, max_results) for name in lists}
        total, returned = max(totals.values()), max(len(v) for v in paged.values())
        return result(
            {
                **obj,
                "blast": {**radius, **paged},
                "totals": totals,
                **paging(total, returned, offset, max_results),
            }
        )

    def get_model_verdicts(
        self, urn: Annotated[str, Field(description="a model version (mlModel) or model group (mlModelGroup) URN")]
    ) -> Annotated[CallToolResult, results.ModelVerdicts]:
        from pareis.answers.verdicts import model_verdicts

        with answering():
            answer = model_verdicts(self.sources, urn)
        return result(answer.to_json())

    # --- helpers over the answers ---------------------------------------------------------------------------------

    def _incident(self, urn: str) -> IncidentAnswer:
        from pareis.answers.incidents import incident_analyses

        for answer in incident_analyses(self.sources):
            if answer.facts.urn == urn:
                return answer
        raise CannotEvaluate(f"unknown incident {urn} (not in the run history)")

    def _versions(self, model: str) -> set[str]:
        from pareis.answers.verdicts import model_versions

        return {v.urn for v in model_versions(self.sources, model)[1]} | {model}
