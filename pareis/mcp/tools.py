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

from pareis.answers import times
from pareis.answers.incidents import IncidentAnswer
from pareis.answers.render import dump
from pareis.answers.sources import CannotEvaluate, Sources, SourceUnavailable
from pareis.mcp import results

T = TypeVar("T")
MAX_PAGE = 500
"""The largest ``max_results`` a caller may ask for: a page stays a few hundred kilobytes at most."""

Offset = Annotated[int, Field(ge=0, description="skip this many items (paging)")]


def result(obj: Mapping[str, Any]) -> CallToolResult:
    """``obj`` as a tool result: structured, and as the CLI's JSON text."""
    return CallToolResult(content=[TextContent(type="text", text=dump(obj))], structured_content=dict(obj))


def window(items: Sequence[T], offset: int, max_results: int) -> list[T]:
    return list(items[offset : offset + max_results])


def paging(total: int, returned: int, offset: int, max_results: int) -> results.Paging:
    """The paging fields of a list answer."""
    return {
        "offset": offset,
        "max_results": max_results,
        "returned": returned,
        "total": total,
        "has_more": offset + returned < total,
    }


@contextmanager
def answering() -> Iterator[None]:
    """Turn what the CLI reports as exit 1 or 2 into tool errors with a one-line reason: the answers layer's
    refusals, a source that is down (store errors translated by the composition root's ``reading``), and bad
    input the lower layers reject (PareisError, ValueError)."""
    from pareis.compose.sources import reading
    from pareis.errors import PareisError

    try:
        with reading():
            yield
    except SourceUnavailable as exc:
        raise ToolError(f"source unavailable: {_one_line(exc)}") from exc
    except (CannotEvaluate, PareisError, ValueError) as exc:
        raise ToolError(_one_line(exc)) from exc


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def at_ms(at: str | int | None, now_ms: int | None = None) -> int:
    """A time argument as the CLI's ``--at`` reads it (:func:`pareis.answers.times.at_ms`); ToolError otherwise."""
    try:
        return times.at_ms(at, now_ms)
    except CannotEvaluate as exc:
        raise ToolError(str(exc).replace("--at ", "at ", 1)) from exc


BLAST_LISTS = ("columns", "datasets", "features", "models")
"""The lists of a blast radius a tool pages."""


def paged_blast(obj: Mapping[str, Any], offset: int, max_results: int) -> dict[str, Any]:
    """An answer holding a blast radius (``obj["blast"]``) with the radius's lists windowed alike, their full
    lengths (``totals``) and the paging fields (``total``: the longest list's length, ``returned``: the longest
    window's)."""
    radius = obj["blast"]
    totals = {name: len(radius[name]) for name in BLAST_LISTS}
    paged = {name: window(radius[name], offset, max_results) for name in BLAST_LISTS}
    total, returned = max(totals.values()), max(len(v) for v in paged.values())
    return {**obj, "blast": {**radius, **paged}, "totals": totals, **paging(total, returned, offset, max_results)}


EVIDENCE_SUMMARY_KEYS = ("id", "title", "status", "summary", "missing")
"""What the evidence pack's summary keeps of each section (its facts tables are the bulk of the pack)."""


def evidence_summary(pack: Mapping[str, Any]) -> dict[str, Any]:
    """The evidence pack's header and, per section, :data:`EVIDENCE_SUMMARY_KEYS`."""
    return {
        "header": pack["header"],
        "sections": [{k: section[k] for k in EVIDENCE_SUMMARY_KEYS if k in section} for section in pack["sections"]],
    }


def entity_type(urn: str) -> str:
    """``dataset`` for ``urn:li:dataset:(…)``; ToolError for something that is not a URN."""
    parts = urn.split(":", 3)
    if len(parts) < 4 or parts[:2] != ["urn", "li"] or not parts[2]:
        raise ToolError(f"{urn!r} is not a DataHub URN")
    return parts[2]


class Tools:
    """The tools over one :class:`Sources`; each method is one MCP tool (see :mod:`pareis.contracts.agent`)."""

    def __init__(self, sources: Sources) -> None:
        self.sources = sources

    def list_incidents(
        self,
        state: Annotated[
            Literal["ACTIVE", "RESOLVED", "ALL"], Field(description="ACTIVE (still failing), RESOLVED or ALL")
        ] = "ACTIVE",
        dataset_urn: Annotated[
            str | None,
            Field(description="only incidents of this dataset or one of its siblings (a dbt node and its table)"),
        ] = None,
        model_urn: Annotated[
            str | None, Field(description="only incidents whose blast radius reaches this model version or group")
        ] = None,
        severity: Annotated[
            Literal["HIGH", "MEDIUM", "LOW", "NONE"] | None, Field(description="only incidents of this severity")
        ] = None,
        at: Annotated[
            str | int | None,
            Field(description="as of this time: ISO-8601 or epoch ms (default: everything known)"),
        ] = None,
        offset: Offset = 0,
        max_results: Annotated[int, Field(ge=1, le=MAX_PAGE, description="page size")] = 20,
    ) -> Annotated[CallToolResult, results.IncidentList]:
        from pareis.answers.listing import IncidentFilter, listed

        when = None if at is None else at_ms(at)
        chosen = IncidentFilter(
            state=None if state == "ALL" else state, severity=severity, dataset=dataset_urn, model=model_urn
        )
        with answering():
            found = listed(self.sources, chosen, when)
        page = window(found, offset, max_results)
        return result({"incidents": [s.to_json() for s in page], **paging(len(found), len(page), offset, max_results)})

    def get_incident(
        self,
        urn: Annotated[str, Field(description="an incident URN, or a dataset or assertion (its latest incident)")],
        offset: Offset = 0,
        max_results: Annotated[int, Field(ge=1, le=MAX_PAGE, description="page size of the blast radius's lists")] = 20,
        at: Annotated[
            str | int | None,
            Field(description="as of this time: ISO-8601 or epoch ms (default: everything known)"),
        ] = None,
    ) -> Annotated[CallToolResult, results.IncidentSummaryResult]:
        from pareis.answers.incidents import analysis

        kind = entity_type(urn)
        when = None if at is None else at_ms(at)
        with answering():
            if kind == "incident":
                answer = self._incident(urn, when)
            elif kind == "dataset":
                answer = analysis(self.sources, dataset=urn, at_ms=when)
            elif kind == "assertion":
                answer = analysis(self.sources, assertion=urn, at_ms=when)
            else:
                raise ToolError(f"{urn} is a {kind}: give an incident, dataset or assertion URN")
        return result(paged_blast(answer.to_json(), offset, max_results))

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
        return result(paged_blast(answer.to_json(), offset, max_results))

    def get_model_verdicts(
        self,
        urn: Annotated[str, Field(description="a model version (mlModel) or model group (mlModelGroup) URN")],
        at: Annotated[
            str | int | None,
            Field(description="as of this time: ISO-8601 or epoch ms (default: everything known)"),
        ] = None,
    ) -> Annotated[CallToolResult, results.ModelVerdicts]:
        from pareis.answers.verdicts import model_verdicts

        when = None if at is None else at_ms(at)
        with answering():
            answer = model_verdicts(self.sources, urn, at_ms=when)
        return result(answer.to_json())

    def check_retrain_gate(
        self,
        model_urn: Annotated[str, Field(description="a model version (mlModel) or model group (mlModelGroup) URN")],
        at: Annotated[
            str | int | None, Field(description="evaluate at this time: ISO-8601 or epoch ms (default now)")
        ] = None,
        max_age_hours: Annotated[
            float, Field(gt=0, description="an upstream assertion's latest run must be this recent")
        ] = 24,
        min_score: Annotated[
            float, Field(ge=0, le=100, description="the lowest reliability score an upstream dataset may have")
        ] = 60,
    ) -> Annotated[CallToolResult, results.GateResult]:
        from pareis.answers.gate import gate

        with answering():
            answer = gate(
                self.sources, model=model_urn, at_ms=at_ms(at), max_age_hours=max_age_hours, min_score=min_score
            )
        return result(answer.to_json())

    def get_reliability(
        self,
        urn: Annotated[str, Field(description="a dataset, model version (mlModel) or model group URN")],
        include_gaps: Annotated[bool, Field(description="also list the ranked untested columns with dbt tests")] = True,
        max_gaps: Annotated[int, Field(ge=0, le=MAX_PAGE, description="list at most this many gaps")] = 10,
        at: Annotated[
            str | int | None, Field(description="score at this time: ISO-8601 or epoch ms (default now)")
        ] = None,
    ) -> Annotated[CallToolResult, results.ReliabilityResult]:
        from pareis.answers.reliability import protect

        kind = entity_type(urn)
        if kind not in ("dataset", "mlModel", "mlModelGroup"):
            raise ToolError(f"{urn} is a {kind}: give a dataset, mlModel or mlModelGroup URN")
        dataset, model = (urn, None) if kind == "dataset" else (None, urn)
        gaps = max_gaps if include_gaps else 0
        with answering():
            answer = protect(self.sources, at_ms=at_ms(at), model=model, dataset=dataset, max_gaps=gaps)
        return result(answer.to_json())

    def get_evidence_pack(
        self,
        model_urn: Annotated[str, Field(description="a model version (mlModel) or model group (mlModelGroup) URN")],
        at: Annotated[
            str | int | None, Field(description="generate as of this time: ISO-8601 or epoch ms (default now)")
        ] = None,
        format: Annotated[
            Literal["summary", "full"],
            Field(
                description="summary (default): the header and each paragraph's status and summary; full: the "
                "Markdown pack and its JSON source (tens of kilobytes)"
            ),
        ] = "summary",
    ) -> Annotated[CallToolResult, results.EvidenceResult]:
        pack, text = self.evidence(model_urn, at_ms(at))
        if format == "full":
            return result({"model": model_urn, "markdown": text, "pack": pack})
        return result({"model": model_urn, "format": "summary", **evidence_summary(pack)})

    def evidence(self, model_urn: str, when_ms: int) -> tuple[dict[str, Any], str]:
        """The evidence pack of ``model_urn`` at ``when_ms``: its JSON and its Markdown (the resource's text);
        ToolError when it cannot be made."""
        from pareis.answers.evidence import evidence_pack
        from pareis.answers.evidence_render import markdown

        with answering():
            pack = evidence_pack(self.sources, model_urn, when_ms).to_json()
        return pack, markdown(pack)

    # --- helpers over the answers ---------------------------------------------------------------------------------

    def _incident(self, urn: str, at: int | None) -> IncidentAnswer:
        from pareis.answers.incidents import incident_analyses

        for answer in incident_analyses(self.sources, at):
            if answer.facts.urn == urn:
                return answer
        raise CannotEvaluate(f"unknown incident {urn} (not in the run history)")
