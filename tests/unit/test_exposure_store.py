"""The exposure index port, on both backends (pareis.store.exposure): versions, generations, incidents."""

from __future__ import annotations

from typing import Any

import pytest

from pareis.core.exposure_index import DatasetExposure, IncidentColumns
from pareis.core.impact import BlastRadius, ModelImpact
from pareis.core.radii import AssertionRadius
from pareis.errors import Fatal
from pareis.store.exposure import ExposureIndex, ExposureVersion, MemoryExposureIndex
from pareis.store.exposure_redis import RedisExposureIndex
from tests.support.backends import Backend

D1 = "urn:li:dataset:(urn:li:dataPlatform:postgres,a.b,PROD)"
D2 = "urn:li:dataset:(urn:li:dataPlatform:postgres,a.c,PROD)"
F1, F2 = "urn:li:mlFeature:(t,f1)", "urn:li:mlFeature:(t,f2)"
M1 = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,m1,PROD)"
G1 = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,g1,PROD)"
ODD = "urn:li:schemaField:(urn:li:dataset:(urn:li:dataPlatform:x,odd,PROD),[version=2.0].x)"


def col(dataset: str, path: str) -> str:
    return f"urn:li:schemaField:({dataset},{path})"


@pytest.fixture
def index(backend: Backend) -> ExposureIndex:
    if backend.client is None:
        return MemoryExposureIndex()
    return RedisExposureIndex(backend.client, prefix="test:exposure:")


def entries(*features: str) -> dict[str, DatasetExposure]:
    return {
        D1: DatasetExposure(D1, {"a": (tuple(sorted(features)), (M1,)), "b%2Cc": ((F1,), ())}, {M1: G1}),
        D2: DatasetExposure(D2, {"x": ((), (M1,))}, {M1: None}),
    }


def incident(urn: str, assertions: tuple[str, ...] = ("urn:li:assertion:a",)) -> IncidentColumns:
    return IncidentColumns(urn, D1, 5, assertions, frozenset({col(D1, "a"), col(D2, "x"), ODD}))


A1, A2 = "urn:li:assertion:a1", "urn:li:assertion:a2"


def radius(assertion: str, *features: str) -> AssertionRadius:
    a, x = col(D1, "a"), col(D2, "x")
    found = BlastRadius(
        failing_columns=(a,),
        origin_columns=(a,),
        columns=(a, x),
        datasets=(D1, D2),
        features=tuple(sorted(features)),
        models=(ModelImpact(M1, G1, tuple(sorted(features)), 3, "column"),),
    )
    return AssertionRadius(assertion, (frozenset({D1}), frozenset({a})), found)


def test_nothing_published_reads_empty_with_the_generation(index: ExposureIndex) -> None:
    assert index.generation() == 0
    assert index.current() is None
    read = index.read([D1], ["urn:li:incident:x"])
    assert (read.version, read.generation, dict(read.datasets), dict(read.incidents)) == (None, 0, {}, {})
    assert not read.fresh and dict(index.read([], radii=[A1]).radii) == {}
    assert index.touch() == 1 and index.touch() == 2 and index.generation() == 2


def test_a_published_version_reads_back_exactly(index: ExposureIndex) -> None:
    index.touch()
    head = index.publish(1, 1_000, entries(F1, F2), [incident("urn:li:incident:i")])
    assert head is not None and head.generation == 1 and head.computed_at_ms == 1_000
    assert index.current() == head
    read = index.read([D2, D1, "urn:li:dataset:unknown"], ["urn:li:incident:i", "urn:li:incident:none"])
    assert read.version == head and read.generation == 1
    assert dict(read.datasets) == entries(F1, F2)
    assert read.datasets[D1].of(col(D1, "a")) == ((F1, F2), (M1,))
    assert read.datasets[D1].of(col(D1, "zzz")) == ((), ())
    assert dict(read.incidents) == {"urn:li:incident:i": incident("urn:li:incident:i")}
    assert index.incident_urns() == {"urn:li:incident:i"}


def test_a_new_version_replaces_the_old_one_whole(index: ExposureIndex) -> None:
    first = index.publish(1, 1, entries(F1), [incident("urn:li:incident:old")])
    second = index.publish(2, 2, {D2: DatasetExposure(D2, {"y": ((F2,), ())})})
    assert first is not None and second is not None and second.version > first.version
    read = index.read([D1, D2], ["urn:li:incident:old"])
    assert read.version == second
    assert dict(read.datasets) == {D2: DatasetExposure(D2, {"y": ((F2,), ())})}  # nothing of the first is left
    assert dict(read.incidents) == {}


def test_assertion_radii_read_back_exactly_and_only_from_the_current_version(index: ExposureIndex) -> None:
    index.touch()
    first = index.publish(1, 1, entries(F1), radii=[radius(A1, F1), radius(A2, F1, F2)])
    assert first is not None
    read = index.read([], radii=[A2, A1, "urn:li:assertion:unknown"])
    assert dict(read.radii) == {A1: radius(A1, F1), A2: radius(A2, F1, F2)} and read.fresh
    assert read.radii[A2].radius.models[0].poisoned_features == (F1, F2)
    assert not index.read([], radii=[A1]).datasets  # what is not asked is not read
    index.touch()
    assert not index.read([], radii=[A1]).fresh  # a lineage change came after the version: its radii may not hold
    second = index.publish(2, 2, entries(F1), radii=[radius(A2, F2)])
    assert second is not None
    assert dict(index.read([D1], radii=[A1, A2]).radii) == {A2: radius(A2, F2)}  # nothing of the first is left
    assert index.publish(1, 3, entries(F2), radii=[radius(A1, F2)]) is None  # older: dropped with its radii
    assert dict(index.read([], radii=[A1, A2]).radii) == {A2: radius(A2, F2)}


def test_a_corrupt_radius_entry_in_redis_stops_the_reader_in_one_line(redis_client: Any) -> None:
    index = RedisExposureIndex(redis_client, prefix="test:exposure:")
    head = index.publish(0, 1, entries(F1), radii=[radius(A1, F1)])
    assert head is not None
    redis_client.hset(f"test:exposure:{{x}}r:{head.version}", A1, '{"t": [')
    with pytest.raises(Fatal, match=f"corrupt exposure index entry: malformed radius entry for {A1}") as caught:
        index.read([], radii=[A1])
    assert "\n" not in str(caught.value)


def test_an_older_generation_never_replaces_a_newer_one(index: ExposureIndex) -> None:
    newer = index.publish(5, 10, entries(F1))
    assert index.publish(4, 20, entries(F2)) is None
    assert index.current() == newer
    assert index.read([D1]).datasets[D1].of(col(D1, "a"))[0] == (F1,)


def test_incidents_join_only_the_current_version(index: ExposureIndex) -> None:
    first = index.publish(1, 1, entries(F1))
    assert first is not None
    assert index.add_incidents(first.version, [incident("urn:li:incident:a")])
    changed = incident("urn:li:incident:a", ("urn:li:assertion:a", "urn:li:assertion:b"))
    assert index.add_incidents(first.version, [changed])  # replaced
    assert dict(index.read([], ["urn:li:incident:a"]).incidents) == {"urn:li:incident:a": changed}
    second = index.publish(2, 2, entries(F1))
    assert second is not None
    assert not index.add_incidents(first.version, [incident("urn:li:incident:b")])
    assert index.incident_urns() == set()


def test_the_age_is_stated_against_the_current_generation() -> None:
    head = ExposureVersion(3, 7, 1_000)
    assert head.to_json(9, 4_000) == {
        "version": 3,
        "computed_at_ms": 1_000,
        "lineage_generation": 7,
        "lineage_changes_since": 2,
        "age_ms": 3_000,
    }
