"""Build hook (the metadata is in pyproject.toml): the wheel carries the top-level ``schemas/`` tree (DESIGN §5 keeps
it there) inside the package as ``pareis/_schemas``, where :func:`pareis.datahub.schemas.schema_root` finds it
through importlib.resources. An editable install reads the top-level tree itself."""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SCHEMAS = Path(__file__).resolve().parent / "schemas"


class BuildPyWithSchemas(build_py):
    def run(self) -> None:
        super().run()
        if not self.editable_mode:
            shutil.copytree(SCHEMAS, Path(self.build_lib) / "pareis" / "_schemas", dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildPyWithSchemas})
