"""``pareis demo``: the recorded timeline through the real code paths on embedded backends (no servers)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

SAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "demo" / "sample" / "timeline.json"


def _when(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M")


def demo(
    timeline: Annotated[
        list[Path] | None, typer.Option("--timeline", help="DataHub file-format files (default: the bundled sample)")
    ] = None,
) -> None:
    """Replay a recorded timeline into the in-process broker, as GMS would log it, and show what landed."""
    from pareis import bootstrap
    from pareis.config import load_settings
    from pareis.datahub.codec import Decoder
    from pareis.datahub.registry import VendoredSchemaSource
    from pareis.kafka.memory import MemoryBroker

    console = Console()
    settings = load_settings()
    files = timeline or [SAMPLE]
    broker = MemoryBroker(partitions=3)
    report = bootstrap.replayer(settings, broker, default_ms=0).run_files(files)
    decoder = Decoder(VendoredSchemaSource(settings.kafka.topics.mcl_timeseries))

    table = Table(title="Change log as GMS would write it", show_lines=False)
    for column in ("time (UTC)", "topic", "partition", "change", "aspect", "entity"):
        table.add_column(column)
    rows = []
    for topic in broker.topics():
        for record in broker.records(topic):
            assert record.value is not None
            change = decoder.decode_mcl(record.value)
            when = (change.created or {}).get("time", 0)
            rows.append((when, topic, record.partition, change.change_type, change.aspect_name, change.entity_urn))
    for when, topic, partition, change_type, aspect, urn in sorted(rows, key=lambda r: (r[0], r[1], r[5] or "")):
        table.add_row(_when(when), topic, str(partition), change_type, aspect or "", urn or "")
    console.print(table)
    for line in report.lines():
        console.print(f"  {line}")
