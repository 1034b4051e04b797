"""Build hook (the metadata is in pyproject.toml).

* The wheel carries the top-level ``schemas/`` and ``skills/`` trees (DESIGN §5 keeps them there) inside the package
  as ``pareis/_schemas`` and ``pareis/_skills``, where :func:`pareis.datahub.wire.schemas.schema_root` and
  :func:`pareis.contracts.agent.skill_dir` find them. An editable install reads the top-level trees themselves.
* The modules listed in ``[tool.pareis] compiled`` are compiled by mypyc into C extensions that shadow their
  sources (an editable install builds them in place, next to the ``.py``). A C compiler is required: a build
  without one fails rather than silently installing the slower pure modules.
"""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

from mypyc.build import mypycify
from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
TREES = {"schemas": "_schemas", "skills": "_skills"}
COMPILED: list[str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pareis"]["compiled"]


class BuildPyWithSchemas(build_py):
    def run(self) -> None:
        super().run()
        if not self.editable_mode:
            for tree, packaged in TREES.items():
                shutil.copytree(ROOT / tree, Path(self.build_lib) / "pareis" / packaged, dirs_exist_ok=True)


setup(
    cmdclass={"build_py": BuildPyWithSchemas},
    # --ignore-missing-imports: the build's isolated environment has only the build requirements; the modules'
    # own imports outside them are typed where they are used (make lint checks the whole tree with every stub).
    ext_modules=mypycify(["--ignore-missing-imports", *COMPILED], opt_level="3"),
)
