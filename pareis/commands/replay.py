"""``pareis replay FILE…``: publish DataHub file-format metadata to the change-log topics as GMS would.

Exit codes: 0 published; 1 the broker or the schema registry unreachable (after ``kafka.connect_timeout_s``) or
failing; 2 an unreadable file or a proposal that cannot be encoded.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from pareis.commands.common import fail, plain
from pareis.errors import Fatal, Poison, Retriable

# A command imports what it runs with inside its function: `pareis --help` imports every command module, and
# stays fast only while they load no more than their options need (pareis/cli.py).

err = Console(stderr=True)


def replay(
    files: Annotated[list[Path], typer.Argument(help="DataHub file-format metadata (JSON arrays of MCPs)")],
    bootstrap_servers: Annotated[
        str | None, typer.Option(help="Kafka bootstrap servers (default: PAREIS_KAFKA__BOOTSTRAP_SERVERS)")
    ] = None,
    schema_registry: Annotated[
        str | None, typer.Option(help="Confluent-compatible schema registry URL (default: DataHub's fixed ids)")
    ] = None,
    versioned_topic: Annotated[str | None, typer.Option(help="versioned change-log topic")] = None,
    timeseries_topic: Annotated[str | None, typer.Option(help="timeseries change-log topic")] = None,
    speed: Annotated[
        float, typer.Option(help="replay the timeline's gaps at this multiple of real time; 0 = no pauses")
    ] = 0.0,
    at: Annotated[
        int | None, typer.Option(help="epoch ms of changes without systemMetadata.lastObserved (default: now)")
    ] = None,
    memory: Annotated[bool, typer.Option("--memory", help="publish into the in-process broker instead")] = False,
) -> None:
    """Publish FILEs to the change-log topics as GMS would (routing, keys, previous values, system metadata)."""
    from pareis.compose import replay as wiring
    from pareis.config import load_settings

    # The options refine the settings' kafka section (the other keys keep their values from the environment).
    topics = {"mcl_versioned": versioned_topic, "mcl_timeseries": timeseries_topic}
    kafka = {"bootstrap_servers": bootstrap_servers, "schema_registry_url": schema_registry}
    given = {k: v for k, v in kafka.items() if v} | {"topics": {k: v for k, v in topics.items() if v}}
    settings = load_settings(kafka=given)
    try:
        sink = wiring.sink(settings, memory=memory)
        replayer = wiring.replayer(settings, sink, default_ms=at or int(time.time() * 1000), speed=speed)
        report = replayer.run_files(files)
    except Poison as exc:
        raise fail("replay", str(exc), 2) from exc
    except (Retriable, Fatal) as exc:
        raise fail("replay", str(exc), 1) from exc
    target = "in-process broker" if memory else settings.kafka.bootstrap_servers
    print(plain(f"replayed {', '.join(str(f) for f in files)} to {target}"))
    for line in report.lines():
        print(plain(f"  {line}"))
