"""Publishing a read-side answer to DataHub (the composition root is the only importer of the REST writer)."""

from __future__ import annotations

from collections.abc import Sequence

from pareis.answers.sources import SourceUnavailable
from pareis.datahub.writes.rest import RestWriter
from pareis.datahub.writes.writer import Mcp
from pareis.errors import Fatal, Poison, Retriable


def publish(mcps: Sequence[Mcp], gms_url: str, token: str | None = None) -> None:
    """Write ``mcps`` to the GMS at ``gms_url`` in order (acryl's REST emitter); SourceUnavailable when GMS is down
    or refuses them, with its reason."""
    writer = RestWriter(gms_url, token)
    try:
        writer.write(mcps)
    except (Retriable, Fatal, Poison) as exc:
        raise SourceUnavailable(f"DataHub at {gms_url} did not take the document: {exc}") from exc
    finally:
        writer.close()
