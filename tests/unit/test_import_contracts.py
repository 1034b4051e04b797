"""The import contracts of ``pyproject.toml`` (``make lint`` runs them): they hold on the tree, and each one fails
on a deliberate violation planted in a copy of it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` over the packages under ``tree``, with ``tree``'s pyproject.toml (``tree`` first on the
    path, so a copy is analysed rather than the installed tree)."""
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(tree / "pyproject.toml"), "--no-cache"],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("tree")
    shutil.copytree(ROOT / "pareis", copy / "pareis", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    return copy


def test_the_contracts_hold_on_the_tree(tree: Path) -> None:
    result = lint_imports(tree)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


VIOLATIONS = [
    ("pareis/core/violation_stdlib.py", "import redis\n", "pareis.core imports the standard library only"),
    ("pareis/core/violation_layer.py", "from pareis.store import runs\n", "layers"),
    ("pareis/datahub/violation.py", "from pareis.kafka import memory\n", "layers"),
    ("pareis/store/violation.py", "from pareis.tickets import port\n", "layers"),
    ("pareis/roles/violation.py", "from pareis.store import lineage_redis\n", "only the composition root"),
    ("pareis/commands/violation.py", "from pareis.kafka import memory\n", "the read surfaces"),
    ("pareis/datahub/wire/violation.py", "from pareis.datahub.writes import marks\n", "datahub rooms"),
]
"""(module planted, its import, the contract it breaks): core on a library and upwards, adapters sideways, a role on
a concrete adapter, a surface on Kafka, a low DataHub room on a higher one."""


def test_each_deliberate_violation_breaks_its_contract(tree: Path) -> None:
    planted = [tree / module for module, _, _ in VIOLATIONS]
    for path, (_, source, _) in zip(planted, VIOLATIONS, strict=True):
        path.write_text(f'"""A deliberate violation."""\n\n{source}')
    try:
        result = lint_imports(tree)  # one run for all of them: each contract reports its own breaks
    finally:
        for path in planted:
            path.unlink()
    assert result.returncode == 1, result.stdout + result.stderr
    broken = result.stdout.split("Broken contracts", 1)[-1]
    sections = {name: broken.find(name) for _, _, name in VIOLATIONS}
    assert all(at >= 0 for at in sections.values()), result.stdout
    for module, _, contract in VIOLATIONS:
        start = sections[contract]
        following = [at for at in sections.values() if at > start]
        section = broken[start : min(following, default=len(broken))]
        assert module.removesuffix(".py").replace("/", ".") in section, f"{module} not under {contract}:\n{broken}"
