"""The package as a user installs it: ``uv build`` (an sdist, then the wheel from it), installed non-editable into a
fresh venv, decodes a change-log frame with the vendored schemas it carries (``pareis/_schemas``, ``setup.py``)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from pareis.datahub.wire.codec import Encoder, mcl_record
from pareis.datahub.wire.registry import VendoredSchemaSource
from tests.support.installed import DECODE, TOPIC, URN, compiled_modules, is_extension

ROOT = Path(__file__).resolve().parents[2]
UV = Path(sys.executable).with_name("uv")
SOURCES = ("pareis", "schemas", "skills", "pyproject.toml", "setup.py", "MANIFEST.in", "README.md")


def run(*command: str | Path, cwd: Path) -> str:
    done = subprocess.run([str(c) for c in command], cwd=cwd, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"{command}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_an_installed_wheel_decodes_a_frame_with_the_schemas_it_carries(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    for name in SOURCES:
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy
        copy(ROOT / name, source / name)
    run(UV, "build", "--quiet", "--out-dir", tmp_path / "dist", cwd=source)
    (wheel,) = (tmp_path / "dist").glob("pareis-*.whl")

    venv = tmp_path / "venv"
    run(UV, "venv", "--quiet", "--python", sys.executable, venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    run(UV, "pip", "install", "--quiet", "--no-deps", "--python", python, wheel, cwd=tmp_path)
    # The dependencies from this venv (after the new venv's own site-packages, so its pareis wins), rather than a
    # second download of acryl-datahub; the editable pareis here is not visible (its .pth is not processed).
    site = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp_path).strip())
    (site / "dev-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    frame = tmp_path / "frame.bin"
    aspect = {"removed": False}
    frame.write_bytes(
        Encoder(VendoredSchemaSource(), TOPIC).encode_mcl(
            mcl_record(entity_urn=URN, aspect_name="status", aspect=aspect)
        )
    )
    elsewhere = tmp_path / "elsewhere"  # not the repository: nothing can be found beside the package by accident
    elsewhere.mkdir()
    answer = json.loads(run(python, "-I", "-c", DECODE, frame, *compiled_modules(), cwd=elsewhere))

    assert Path(answer["package"]).is_relative_to(venv), "the installed copy, not the source tree"
    assert Path(answer["schemas"]) == Path(answer["package"]).parent / "_schemas"
    # The Agent Skill the start-up definitions catalogue travels with the package too.
    assert Path(answer["skill"]) == Path(answer["package"]).parent / "_skills" / "pareis-ml-incidents"
    assert answer["skill_md"]
    assert (answer["urn"], answer["aspect"], answer["value"]) == (URN, "status", aspect)
    # The wheel carries the modules mypyc compiles as extensions, inside the installed copy.
    assert answer["compiled"] and all(
        is_extension(f) and Path(f).is_relative_to(venv) for f in answer["compiled"].values()
    ), answer["compiled"]
