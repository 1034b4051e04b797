"""``catalog.model_versions`` reads only what a version's §2.3 view needs (group, label, training time), not a model's
features nor a run's inputs: the same answer as the models' and runs' full records give, on DataHub's own connector
output and the demo recording."""

from __future__ import annotations

import pytest

from pareis.core import catalog
from pareis.core.contamination import ModelVersion, known_time, trained_at
from pareis.core.graph import Memo
from tests.support.goldens import DEMO, every_golden, load


def from_full_records(view: Memo, urns: list[str]) -> dict[str, ModelVersion]:
    """The §2.3 view as :func:`catalog.models` and :func:`catalog.runs` spell a model and its training runs."""
    infos = catalog.models(view, urns)
    started = catalog.runs(view, {r for i in infos.values() for r in i.training_runs})
    out = {}
    for m, info in infos.items():
        starts = [s for r in info.training_runs if (s := started[r].started_ms) is not None and known_time(s)]
        when = trained_at(max(starts, default=None), info.created_ms, info.version_created_ms)
        out[m] = ModelVersion(urn=m, group=info.group, version=info.version, trained_at_ms=when)
    return out


SOURCES = {p.stem: [p] for p in every_golden()} | {"demo": sorted(DEMO.glob("*.json"))}


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_versions_read_lightly_are_those_of_the_full_records(name: str) -> None:
    store = load(*SOURCES[name]).store
    groups = store.entities("mlModelGroupProperties") + store.entities("versionSetProperties")
    members = catalog.group_members(Memo(store), groups)
    models = sorted(
        {m for ms in members.values() for m in ms}
        | {u for aspect in ("mlModelProperties", "versionProperties") for u in store.entities(aspect)}
    )
    if name in ("demo", "mlflow__mlflow_mcps_golden"):  # models with groups, labels and training runs
        found = catalog.model_versions(Memo(store), models).values()
        assert len(models) >= (3 if name == "demo" else 1) and all(v.group and v.trained_at_ms for v in found)
    models += ["urn:li:mlModel:(urn:li:dataPlatform:mlflow,not-indexed,PROD)"]
    assert catalog.model_versions(Memo(store), models) == from_full_records(Memo(store), models)
