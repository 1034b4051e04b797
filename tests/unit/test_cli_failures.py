"""Every command fails with one line on stderr and exit 2 (cannot evaluate) or 1 (a dependency failed), never a
traceback: bad input, bad settings, a busy port (issue 11, point 11)."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from pareis import cli
from pareis.compose import process
from pareis.compose.replay import replayer
from pareis.config import Settings
from pareis.datahub.files.metadata_file import MetadataFileError
from pareis.kafka.memory import MemoryBroker
from tests.support import sample

ASSERTION = sample.assertion("not_null_unit_price")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as done:
        cli.main(list(args))
    code = done.value.code
    return int(code) if isinstance(code, int) else 0, capsys.readouterr().err


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    timeline = json.loads(sample.TIMELINE.read_text())
    shape = json.loads(sample.TIMELINE.read_text())
    (lineage, *_) = [c for c in shape if c["aspectName"] == "upstreamLineage"]
    lineage["aspect"]["json"]["upstreams"] = "x"
    paths = {name: tmp_path / f"{name}.json" for name in ("good", "shape", "deep", "broken")}
    paths["broken"].write_text(json.dumps(timeline)[:-40])
    paths["good"].write_text(json.dumps(timeline))
    paths["shape"].write_text(json.dumps(shape))
    paths["deep"].write_text("[" * 100_000 + "]" * 100_000)
    return paths


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        s.listen()
        yield int(s.getsockname()[1])


def one_line(err: str) -> str:
    assert "Traceback" not in err and "╭" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("which", ["shape", "deep"])
def test_a_malformed_or_deeply_nested_file_is_exit_2(
    capsys: pytest.CaptureFixture[str], files: dict[str, Path], which: str
) -> None:
    code, err = run(capsys, "blast", "--metadata", str(files[which]), "--assertion", ASSERTION)
    assert code == 2
    assert one_line(err).startswith(f"pareis blast: {files[which]}")


def test_a_bad_demo_timeline_or_out_is_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, err = run(capsys, "demo", "--timeline", str(tmp_path / "missing.json"))
    assert code == 2 and "no such file" in one_line(err)
    (tmp_path / "file").write_text("")
    code, err = run(capsys, "demo", "--timeline", str(sample.TIMELINE), "--out", str(tmp_path / "file" / "out"))
    assert code == 2 and "--out" in err.splitlines()[-1] and "Traceback" not in err


def test_a_bad_redis_url_in_bootstrap_is_exit_2(capsys: pytest.CaptureFixture[str], files: dict[str, Path]) -> None:
    code, err = run(capsys, "bootstrap", "--redis", "notaurl", "--metadata", str(files["good"]))
    assert code == 2 and "Redis URL" in one_line(err)


def test_an_unreachable_redis_is_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(capsys, "blast", "--redis", "redis://127.0.0.1:1/0", "--assertion", ASSERTION)
    assert code == 1 and one_line(err).startswith("pareis blast:")


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("PAREIS_RUNTIME__BATCH_SIZE", "many", "runtime.batch_size"),
        ("PAREIS_CONFIG_FILE", "/nonexistent/pareis.yaml", "no such file"),
        ("PAREIS_LOG_LEVEL", "LOUD", "log_level"),
        ("PAREIS_TICKETS__SLAK__TOKEN", "xoxb-1", "tickets.slak"),
    ],
)
def test_bad_settings_are_exit_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, variable: str, value: str, says: str
) -> None:
    monkeypatch.setenv(variable, value)
    code, err = run(capsys, "run", "lineage")
    assert code == 2 and says in one_line(err)


def test_a_port_in_use_is_exit_2_naming_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, busy_port: int
) -> None:
    monkeypatch.setenv("PAREIS_RUNTIME__HTTP_PORT", str(busy_port))
    # Logging stays as the suite configured it (run() would bind it to this test's captured, soon closed, stream).
    monkeypatch.setattr(process, "configure_logging", lambda *_: None)
    code, err = run(capsys, "run", "lineage")
    assert code == 2 and f":{busy_port} (runtime.http_port)" in one_line(err)


def test_replay_validates_every_file_before_publishing(files: dict[str, Path]) -> None:
    broker = MemoryBroker()
    with pytest.raises(MetadataFileError):
        replayer(Settings(), broker, default_ms=0).run_files([files["good"], files["broken"]])
    assert broker.size(Settings().kafka.topics.mcl_versioned) == 0, "nothing of the good file was published"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["run", "nosuchrole"], "pareis run: Invalid value: unknown role 'nosuchrole'"),
        (["serve", "--nonsense"], "pareis serve: No such option: --nonsense (see pareis serve --help)"),
        (["gate"], "pareis gate: Missing option '--model'."),
        (["protect", "--max-gaps", "-1"], "pareis protect: Invalid value for '--max-gaps'"),
        (["nosuchcmd"], "No such command 'nosuchcmd'. (see pareis --help)"),
    ],
)
def test_a_usage_error_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], args: list[str], says: str) -> None:
    """Before, typer printed its usage and a framed error box (five lines and more)."""
    code, err = run(capsys, *args)
    assert code == 2
    assert says in one_line(err)


def test_help_and_a_successful_command_still_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main(["--help"])
    assert done.value.code == 0 and "Usage: pareis" in capsys.readouterr().out
    code, err = run(capsys, "blast", "--metadata", str(sample.TIMELINE), "--assertion", ASSERTION)
    assert (code, err) == (0, "")
