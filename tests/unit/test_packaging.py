"""The image is built from the lock file, with a bounded context and no package installer at run time
(issue 11, point 13); the CLI never prints locals."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from pareis import cli

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "deploy" / "Dockerfile").read_text()


def stages() -> list[str]:
    return re.split(r"^FROM ", DOCKERFILE, flags=re.M)[1:]


def test_dependencies_come_from_the_lock_file() -> None:
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    names = {p["name"] for p in lock["package"]}
    assert {"pareis", "confluent-kafka", "redis", "typer", "pydantic-settings"} <= names
    build = stages()[0]
    assert "COPY pyproject.toml uv.lock" in build
    assert all("--locked" in line for line in build.splitlines() if "uv sync" in line)
    assert "pip install ." not in DOCKERFILE and "pip install -e" not in DOCKERFILE


def test_the_runtime_stage_has_no_pip_and_runs_unprivileged() -> None:
    runtime = stages()[-1]
    assert "pip uninstall -y pip" in runtime and "pip install" not in runtime
    assert "USER 10001" in runtime


def test_the_build_context_is_bounded() -> None:
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    assert ignore[ignore.index("*")] == "*", "everything is excluded first"
    allowed = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    copied = set(re.findall(r"^COPY (?!--from)(.+?) \S+$", DOCKERFILE, flags=re.M))
    sources = {part for line in copied for part in line.split()}
    assert sources <= allowed, "the Dockerfile copies only what the context admits"
    assert ".venv" not in allowed and "tests" not in allowed


def test_the_cli_never_prints_locals_nor_a_rich_traceback() -> None:
    assert cli.app.pretty_exceptions_show_locals is False
    assert cli.app.pretty_exceptions_enable is False
    requirement = next(d for d in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
                       if d.startswith("typer"))  # fmt: skip
    assert "<" in requirement, "typer pinned below its next major version"
