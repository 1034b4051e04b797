"""Real DataHub metadata for tests: the golden files of DataHub's own ingestion tests (``tests/data/datahub-goldens``,
copied verbatim with their provenance in its INDEX.md) and the small overlays of ``tests/data/overlays`` that supply
what no golden has (a failing run, a run input, a second model version, a soft delete; each file says in its name).

:func:`load` reads files into an in-memory index and run history exactly as ``--metadata`` does
(:func:`pareis.lineage_loader.load_files`); :func:`incident` analyses a dataset's latest incident the way the
incidents role does (:func:`pareis.roles.incidents.analysis_inputs`' rules: blast radius per failing assertion,
every version of each affected group, failure classes), without any surface.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pareis.core import catalog
from pareis.core.blast import blast_radius
from pareis.core.graph import Memo
from pareis.core.impact import BlastRadius
from pareis.core.incident_urn import incident_urn
from pareis.core.inputs import model_versions
from pareis.core.intents import AnalysisInputs, IncidentFacts, analyse
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
    keyed and analysed as the incidents role does."""
    wanted = None if assertions is None else set(assertions)
    view = Memo(metadata.store)
    members = sibling_classes(view, [dataset])[dataset]
    runs = tuple(r for r in metadata.runs if r.dataset in members and (wanted is None or r.assertion in wanted))
    window = incidents(runs)[-1]
    defs = catalog.assertions(view, window.assertions)
    assertees = {r.assertion: r.dataset for r in runs}
    blast: dict[str, BlastRadius] = {
        a: blast_radius(view, assertions=[a]) if a in defs else blast_radius(view, datasets=[assertees[a]])
        for a in window.assertions
    }
    inputs = AnalysisInputs(
        runs=runs,
        blast=blast,
        versions=model_versions(view, blast.values()),
        failure_classes=catalog.failure_classes(defs),
    )
    key = canonical(members)
    return analyse(incident_urn(key, window.first_failure_ms), key, window, inputs)
