"""The modules mypyc compiles (pyproject.toml ``[tool.pareis] compiled``, setup.py) are what this checkout runs, and
are built from the sources beside them: an extension shadows its ``.py``, so an edit not followed by ``make install``
would leave every test measuring the old code."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from tests.support.installed import compiled_modules, is_extension

ROOT = Path(__file__).resolve().parents[2]


def test_something_is_compiled() -> None:
    assert compiled_modules(), "pyproject.toml [tool.pareis] compiled lists the modules setup.py compiles"


@pytest.mark.parametrize("name", compiled_modules())
def test_a_compiled_module_runs_as_the_extension_built_from_its_current_source(name: str) -> None:
    module = importlib.import_module(name)
    source = ROOT / (name.replace(".", "/") + ".py")
    assert module.__file__ is not None and is_extension(module.__file__), (
        f"{name} runs from {module.__file__}, not its extension: run `make install`"
    )
    built = Path(module.__file__).stat().st_mtime
    assert built >= source.stat().st_mtime, f"{name}'s extension is older than {source.name}: run `make install`"
