"""``deploy/local/compiler.sh`` (run first by ``make install``): it passes for an interpreter that can build the
mypyc-compiled modules, and refuses anything else with one line rather than a compiler error from setuptools."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.stack import REPO_DIR

pytestmark = pytest.mark.integration

SCRIPT = REPO_DIR / "deploy" / "local" / "compiler.sh"


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=60, check=False)


def test_the_projects_own_interpreter_passes_quietly() -> None:
    done = run(sys.executable)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


@pytest.mark.parametrize("args", [(), ("/nonexistent/python",), ("a", "b")])
def test_bad_arguments_get_one_line_and_exit_2(args: tuple[str, ...]) -> None:
    done = run(*args)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr


def test_an_interpreter_without_headers_outside_debians_is_refused_in_one_line(tmp_path: Path) -> None:
    # Stands in for an interpreter whose include directory has no Python.h and is not Debian's (no package adds
    # it): it runs, fails the header check, and names its include directory.
    fake = tmp_path / "python"
    fake.write_text(
        '#!/bin/sh\ncase "$2" in\n  "") exit 0 ;;\n  *Python.h*) exit 1 ;;\n  *) echo /opt/elsewhere/include ;;\nesac\n'
    )
    fake.chmod(0o755)
    done = run(fake)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stderr.strip().splitlines() == [
        f"ERROR: compiler: {fake} has no C headers (Python.h under /opt/elsewhere/include); use a build that ships them"
    ]
