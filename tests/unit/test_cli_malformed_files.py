"""One contract for a malformed file (issue 31 item 8): a file given on the command line is input, not a stream.
Every command that reads files refuses one with a malformed record before it answers or runs anything: exit 2 and one
line naming the file and the record; dead letters are for the running service (``pareis run``).

The files: the dbt ``dbt_test_events`` golden, then an overlay of one bad record (element 0):

* ``malformed_aspect_not_an_object``: ``"aspect": {"json": 5}`` (every aspect is a record, an object);
* ``malformed_upstreams_not_an_array``: ``upstreamLineage`` whose ``upstreams`` is 5 (GMS would refuse it; the sibling
  hook the file readers emulate reads it);
* ``malformed_run_event_time``: an ``assertionRunEvent`` whose ``timestampMillis`` is not a number.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pareis import cli
from tests.support.goldens import golden, overlay

DATASET = "urn:li:dataset:(urn:li:dataPlatform:dbt,calm-pagoda-323403.jaffle_shop.orders,PROD)"
MODEL = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,any,PROD)"
OVERLAYS = ["malformed_aspect_not_an_object", "malformed_upstreams_not_an_array", "malformed_run_event_time"]


def commands(good: Path, bad: Path, tmp: Path) -> dict[str, list[str]]:
    metadata = ["--metadata", str(good), "--metadata", str(bad)]
    return {
        "analyze": ["analyze", *metadata, "--dataset", DATASET],
        "blast": ["blast", *metadata, "--dataset", DATASET],
        "gate": ["gate", *metadata, "--model", MODEL],
        "protect": ["protect", *metadata],
        "evidence": ["evidence", *metadata, "--model", MODEL, "--out", str(tmp / "evidence")],
        "serve": ["serve", *metadata, "--port", "1"],
        "mcp": ["mcp", *metadata],
        "bootstrap": ["bootstrap", *metadata, "--redis", "redis://127.0.0.1:1/0"],
        "replay": ["replay", "--memory", str(good), str(bad)],
        "demo": ["demo", "--timeline", str(good), "--timeline", str(bad), "--out", str(tmp / "demo")],
    }


@pytest.mark.parametrize("name", OVERLAYS)
@pytest.mark.parametrize("command", list(commands(Path(), Path(), Path())))
def test_every_command_refuses_a_malformed_file_naming_the_file_and_record(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str, name: str
) -> None:
    bad = overlay(name)
    with pytest.raises(SystemExit) as done:
        cli.main(commands(golden("dbt__dbt_test_events_golden"), bad, tmp_path)[command])
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert (done.value.code, len(lines)) == (2, 1), err
    assert lines[0].startswith(f"pareis {command}: {bad}#0: "), err
    assert "Traceback" not in err and "dead letters" not in out
    assert not (tmp_path / "demo").exists(), "refused before anything runs"
