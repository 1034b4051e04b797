"""The image's build stage without a container engine: the ``COPY`` and ``RUN`` steps of ``deploy/Dockerfile``'s
build stage, run here in that order with the stage's ``ENV``, must install Pareis from ``uv.lock`` (``--locked``:
a lock that no longer matches ``pyproject.toml`` fails the build) into the environment the runtime stage copies,
and that environment must start ``pareis`` and decode a change-log frame with nothing of the repository beside it.

What this cannot show (no Docker engine and no container registry on these machines): the base image itself, the
runtime stage's user and the ``pip`` removal. The steps are read from the Dockerfile, so the test follows it.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from pareis.datahub.wire.codec import Encoder, mcl_record
from pareis.datahub.wire.registry import VendoredSchemaSource
from tests.support.installed import DECODE, TOPIC, URN, compiled_modules, is_extension

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
UV = Path(sys.executable).with_name("uv")


def instructions(text: str) -> list[tuple[str, str]]:
    """(instruction, arguments) of a Dockerfile, continuation lines joined (runs of blanks made one) and comments
    dropped."""
    joined, pending = [], ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending += line.rstrip().removesuffix("\\") + " " if line.rstrip().endswith("\\") else line
        if not line.rstrip().endswith("\\"):
            joined.append(" ".join(pending.split()))
            pending = ""
    return [(op.upper(), rest.strip()) for op, _, rest in (entry.partition(" ") for entry in joined)]


def build_stage(steps: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The steps of the first stage (``FROM … AS build`` up to the next ``FROM``)."""
    froms = [i for i, (op, _) in enumerate(steps) if op == "FROM"]
    assert len(froms) == 2 and steps[froms[0]][1].endswith("AS build"), "a build stage, then the runtime stage"
    return steps[froms[0] + 1 : froms[1]]


def env_of(arguments: str) -> dict[str, str]:
    return dict(pair.split("=", 1) for pair in shlex.split(arguments))


def test_the_instruction_reader_joins_continuations_and_drops_comments() -> None:
    text = "# c\nFROM x AS build\nENV A=1 \\\n    B=2\nRUN a \\\n && b\nFROM y\n"
    assert instructions(text) == [("FROM", "x AS build"), ("ENV", "A=1 B=2"), ("RUN", "a && b"), ("FROM", "y")]
    assert env_of("A=1 B=2") == {"A": "1", "B": "2"}


def test_the_build_stage_installs_from_the_lock_an_environment_that_decodes(tmp_path: Path) -> None:
    steps = instructions(DOCKERFILE.read_text())
    stage = build_stage(steps)
    app, env = tmp_path / "app", {**os.environ}
    target = tmp_path / "opt" / "pareis"
    env.pop("VIRTUAL_ENV", None)
    ran = []
    for op, arguments in stage:
        if op == "ENV":
            env.update(env_of(arguments))
            env["UV_PROJECT_ENVIRONMENT"] = str(target)  # /opt/pareis, here
        elif op == "WORKDIR":
            assert arguments == "/app"
            app.mkdir()
        elif op == "COPY":
            *sources, destination = shlex.split(arguments)
            for source in sources:
                into = app / destination / (Path(source).name if destination.endswith("/") else "")
                copy = shutil.copytree if (ROOT / source).is_dir() else shutil.copy
                copy(ROOT / source, into)
        elif op == "RUN" and arguments.startswith("pip install"):
            # uv itself: this machine's uv must be the version the image pins.
            (pin,) = [word for word in shlex.split(arguments) if word.startswith("uv==")]
            version = subprocess.run([UV, "--version"], capture_output=True, text=True, check=True).stdout.split()[1]
            assert pin == f"uv=={version}", f"the image pins {pin}, the project's venv has uv {version}"
        elif op == "RUN":
            env["PATH"] = f"{UV.parent}{os.pathsep}{env['PATH']}"
            done = subprocess.run(
                ["sh", "-c", arguments], cwd=app, env=env, capture_output=True, text=True, timeout=600, check=False
            )
            assert done.returncode == 0, f"RUN {arguments}:\n{done.stdout}\n{done.stderr}"
            ran.append(arguments)
        else:
            raise AssertionError(f"an instruction this test does not know how to run here: {op} {arguments}")
    assert any("--locked" in run and "--no-editable" in run for run in ran), "the project installed from the lock"

    frame = tmp_path / "frame.bin"
    aspect = {"removed": False}
    frame.write_bytes(
        Encoder(VendoredSchemaSource(), TOPIC).encode_mcl(
            mcl_record(entity_urn=URN, aspect_name="status", aspect=aspect)
        )
    )
    shutil.rmtree(app)  # the runtime stage copies only the environment
    elsewhere = tmp_path / "tmp"
    elsewhere.mkdir()
    clean = {"PATH": f"{target / 'bin'}{os.pathsep}/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}
    decoded = subprocess.run(
        [target / "bin" / "python", "-I", "-c", DECODE, frame, *compiled_modules()],
        cwd=elsewhere,
        env=clean,
        capture_output=True,
        text=True,
    )
    assert decoded.returncode == 0, decoded.stderr
    answer = json.loads(decoded.stdout)
    assert Path(answer["package"]).is_relative_to(target), "the installed copy, not the source tree"
    assert (answer["urn"], answer["aspect"], answer["value"]) == (URN, "status", aspect)
    assert answer["compiled"] and all(
        is_extension(f) and Path(f).is_relative_to(target) for f in answer["compiled"].values()
    ), "the stage compiles the modules mypyc builds"
    entry = subprocess.run(["pareis", "--help"], cwd=elsewhere, env=clean, capture_output=True, text=True)
    assert entry.returncode == 0 and "run" in entry.stdout, entry.stderr
