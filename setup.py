"""Build hook (the metadata is in pyproject.toml): the wheel carries the top-level ``schemas/`` and ``skills/`` trees
(DESIGN §5 keeps them there) inside the package as ``pareis/_schemas`` and ``pareis/_skills``, where
:func:`pareis.datahub.schemas.schema_root` and :func:`pareis.model.agent.skill_dir` find them. An editable install
reads the top-level trees themselves."""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
TREES = {"schemas": "_schemas", "skills": "_skills"}


class BuildPyWithSchemas(build_py):
    def run(self) -> None:
        super().run()
        if not self.editable_mode:
            for tree, packaged in TREES.items():
                shutil.copytree(ROOT / tree, Path(self.build_lib) / "pareis" / packaged, dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildPyWithSchemas})
