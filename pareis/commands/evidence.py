"""``pareis evidence``: write a model's Article 10 evidence pack (DESIGN §2.5) as Markdown, HTML and/or JSON.

Writes ``<out>/evidence-<model name>.{md,html,json}`` (``--format`` picks some of them, comma-separated) and
prints the paths. ``--publish URL`` also writes the pack as a DataHub Document related to the model
(:mod:`pareis.datahub.writes.evidence_doc`; deterministic URN, so regenerating replaces it). The JSON is the source;
the Markdown and HTML render it. Exit 2 with a one-line reason for an
unknown model, unreadable input or an unwritable ``--out``; 1 when a dependency is down.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pareis.answers.sources import CannotEvaluate
from pareis.commands.common import (
    DatahubOption,
    MetadataOption,
    RedisOption,
    TokenOption,
    dump,
    evaluating,
    gms_token,
    opened,
)
from pareis.commands.times import AtOption, at_ms_of

if TYPE_CHECKING:
    from pareis.answers.evidence import EvidencePack

# A command imports what it runs with inside its function: `pareis --help` imports every command module, and
# stays fast only while they load no more than their options need (pareis/cli.py).

FORMATS = ("md", "html", "json")


def write_pack(pack: EvidencePack, out: Path, formats: tuple[str, ...] = FORMATS) -> list[Path]:
    """Write ``pack`` into ``out`` (created if needed) in ``formats``; CannotEvaluate when it can't be written."""
    from pareis.answers.evidence_render import markdown, to_html

    data = pack.to_json()
    render = {"json": lambda: dump(data) + "\n", "md": lambda: markdown(data), "html": lambda: to_html(data)}
    written = []
    try:
        out.mkdir(parents=True, exist_ok=True)
        for fmt in formats:
            path = out / f"{pack.file_stem}.{fmt}"
            path.write_text(render[fmt](), encoding="utf-8")
            written.append(path)
    except OSError as exc:
        raise CannotEvaluate(f"cannot write to {out}: {exc.strerror or exc}") from exc
    return written


def evidence(
    model: Annotated[str, typer.Option("--model", help="URN of a model version or model group")],
    out: Annotated[Path, typer.Option("--out", help="directory to write the pack into")],
    metadata: MetadataOption = None,
    redis_url: RedisOption = None,
    datahub_url: DatahubOption = None,
    token: TokenOption = None,
    at: AtOption = None,
    formats: Annotated[str, typer.Option("--format", help="comma-separated: md, html, json")] = "md,html,json",
    publish_to: Annotated[
        str | None,
        typer.Option("--publish", help="also publish the pack as a DataHub Document to the GMS at this URL"),
    ] = None,
) -> None:
    """Write the EU AI Act Article 10 evidence pack of a model (not legal advice)."""
    from pareis.answers.evidence import evidence_pack

    with evaluating("evidence"):
        chosen = tuple(f.strip() for f in formats.split(",") if f.strip())
        unknown = sorted(set(chosen) - set(FORMATS))
        if unknown or not chosen:
            raise CannotEvaluate(f"--format takes md, html and/or json, not {', '.join(unknown) or 'nothing'}")
        when = at_ms_of(at)
        with opened(metadata, redis_url, datahub_url, token) as sources:
            pack = evidence_pack(sources, model, when)
        for path in write_pack(pack, out, chosen):
            print(path)
        if publish_to is not None:
            from pareis.answers.evidence_render import markdown
            from pareis.compose.publish import publish
            from pareis.config import load_settings
            from pareis.datahub.writes.evidence_doc import document_mcp, document_urn

            data = pack.to_json()
            publish([document_mcp(data, markdown(data), load_settings().datahub)], publish_to, gms_token(token))
            print(document_urn(pack.model))
