"""Real DataHub metadata for tests: the golden files of DataHub's own ingestion tests (``tests/data/datahub-goldens``,
copied verbatim with their provenance in its INDEX.md) and the small overlays of ``tests/data/overlays`` that supply
what no golden has (a failing run, a run input, a second model version, a soft delete; each file says in its name).

:func:`load` reads files into an in-memory index and run history exactly as ``--metadata`` does
(:func:`pareis.lineage_loader.load_files`); :func:`incident` analyses a dataset's latest incident the way the
incidents role does (:func:`pareis.core.analysis.incident_facts`: blast radius per failing assertion, every version
of each affected group, failure classes, owners), without any surface.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pareis.core.analysis import incident_facts
from pareis.core.graph import Memo
from pareis.core.intents import IncidentFacts
from pareis.core.keys import canonical, sibling_classes
from pareis.core.runs import AssertionRun
from pareis.core.window import incidents
from pareis.lineage_loader import load_files
from pareis.store.lineage_memory import MemoryLineageStore

DATA = Path(__file__).resolve().parents[1] / "data"
GOLDENS = DATA / "datahub-goldens"
OVERLAYS = DATA / "overlays"
DEMO = Path(__file__).resolve().parents[2] / "deploy" / "demo" / "recorded"


def golden(name: str) -> Path:
    """A golden file by its local name without ``.json`` (``"feast__feast_repository_mces_golden"``)."""
    path = GOLDENS / f"{name}.json"
    assert path.is_file(), path
    return path


def overlay(name: str) -> Path:
    path = OVERLAYS / f"{name}.json"
    assert path.is_file(), path
    return path


def every_golden() -> list[Path]:
    """Every golden file, in path order (``v2021/`` included)."""
    return sorted(GOLDENS.rglob("*.json"))


@dataclass
class Metadata:
    """An index and the assertion runs, loaded from files."""

    store: MemoryLineageStore
    runs: list[AssertionRun]

    def add(self, *paths: Path) -> Metadata:
        """Lay more files over what is loaded (a later soft delete, a restore)."""
        self.runs.extend(load_files(self.store, list(paths)).runs)
        return self


def load(*paths: Path, hooks: bool = True) -> Metadata:
    """``hooks=False``: without GMS's sibling hook (for files that already hold what it writes)."""
    store = MemoryLineageStore()
    return Metadata(store, list(load_files(store, list(paths), hooks=hooks).runs))


def incident(metadata: Metadata, dataset: str, assertions: Iterable[str] | None = None) -> IncidentFacts:
    """The latest incident of ``dataset``'s sibling class (the runs of its assertions, or only of ``assertions``),
    keyed and analysed as the incidents role does (:func:`pareis.core.analysis.incident_facts`)."""
    wanted = None if assertions is None else set(assertions)
    view = Memo(metadata.store)
    members = sibling_classes(view, [dataset])[dataset]
    runs = [r for r in metadata.runs if r.dataset in members and (wanted is None or r.assertion in wanted)]
    timeline = tuple(sorted(runs, key=lambda r: (r.timestamp_ms, r.assertion)))  # the run history's order
    return incident_facts(view, canonical(members), timeline, incidents(timeline)[-1])
