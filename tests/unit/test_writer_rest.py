"""The REST writer's boundary: what GMS answers becomes Retriable, Poison or Fatal (never a library error),
at once (no retries hidden in the emitter), and the writer stays usable after a failure."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from datahub.configuration.common import OperationalError
from pydantic import SecretStr

from pareis.config import DatahubSettings
from pareis.datahub.writes.incident_writes import intent_mcps
from pareis.datahub.writes.rest import GmsRejected, RestWriter, from_rest_error
from pareis.errors import Fatal, Poison, Retriable
from tests.support.fake_gms import INCIDENT_TYPES_MASTER, FakeGms, received_from
from tests.support.writer_scenario import SETTINGS, story

MCPS = intent_mcps(story().open, SETTINGS)
FIRST, SECOND, THIRD = MCPS[:3]


def ingestions(gms: FakeGms) -> int:
    return sum(1 for path in gms.paths if path != "GET /config")


@pytest.mark.parametrize("openapi", [False, True], ids=["restli", "openapi"])
@pytest.mark.parametrize("status", [500, 502, 503, 504, 408])
def test_server_errors_are_retriable_and_not_retried_inside_the_emitter(openapi: bool, status: int) -> None:
    with FakeGms() as gms:
        writer = RestWriter(gms.url, openapi=openapi)
        gms.fail_next(status, after=1)  # after /config
        with pytest.raises(Retriable, match=f"HTTP {status}"):
            writer.write([FIRST])
        assert ingestions(gms) == 1 and gms.received == []


def test_too_many_requests_is_retriable_with_the_servers_hint() -> None:
    with FakeGms() as gms:
        gms.fail_next(429, after=1, retry_after="7")
        with pytest.raises(Retriable) as caught:
            RestWriter(gms.url).write([FIRST])
    assert caught.value.retry_after == 7.0


@pytest.mark.parametrize("openapi", [False, True], ids=["restli", "openapi"])
@pytest.mark.parametrize("status", [400, 403, 404, 409, 422])
def test_a_refused_proposal_is_poison_carrying_gms_answer(openapi: bool, status: int) -> None:
    with FakeGms() as gms:
        gms.fail_next(status, after=1, message="Failed to validate record with class IncidentInfo")
        with pytest.raises(GmsRejected) as caught:
            RestWriter(gms.url, openapi=openapi).write([FIRST])
    error = caught.value
    assert isinstance(error, Poison) and error.status == status
    assert "Failed to validate record with class IncidentInfo" in error.body
    assert "incidentInfo" in str(error) and str(FIRST.entityUrn) in str(error)


def test_earlier_proposals_stay_written_and_the_writer_goes_on_after_a_failure() -> None:
    with FakeGms() as gms:
        writer = RestWriter(gms.url)
        gms.fail_next(503, after=2)  # /config, FIRST, then SECOND fails
        with pytest.raises(Retriable):
            writer.write([FIRST, SECOND, THIRD])
        assert gms.received == [received_from(FIRST)]
        writer.write([SECOND, THIRD])
        assert gms.received == [received_from(m) for m in (FIRST, SECOND, THIRD)]


def test_a_refused_token_is_fatal_at_connection_and_on_a_write() -> None:
    with FakeGms(token="right") as gms:
        with pytest.raises(Fatal, match="token"):
            RestWriter(gms.url, "wrong").write([FIRST])
        writer = RestWriter(gms.url, "right")
        writer.write([FIRST])
        gms.fail_next(401)
        with pytest.raises(Fatal, match="401"):
            writer.write([SECOND])


def test_an_unavailable_config_endpoint_is_retriable() -> None:
    with FakeGms() as gms:
        gms.fail_next(503)
        writer = RestWriter(gms.url)
        with pytest.raises(Retriable, match="503"):
            writer.write([FIRST])
        writer.write([FIRST])
        assert gms.received == [received_from(FIRST)]


def test_a_url_that_is_not_gms_is_fatal() -> None:
    with FakeGms(gms=False) as gms, pytest.raises(Fatal, match="not answer as DataHub GMS"):
        RestWriter(gms.url).write([FIRST])


def test_no_listener_is_retriable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(Retriable, match="unreachable"):
        RestWriter(f"http://127.0.0.1:{port}", timeout_s=2).write([FIRST])


def test_settings_build_the_writer_with_the_token_and_require_a_url() -> None:
    with FakeGms(token="s3cret") as gms:
        settings = DatahubSettings(write_path="rest", gms_url=gms.url, token=SecretStr("s3cret"))
        RestWriter.from_settings(settings).write([FIRST])
        assert gms.received == [received_from(FIRST)]
    with pytest.raises(Fatal, match="gms_url"):
        RestWriter.from_settings(DatahubSettings(write_path="rest"))


def test_an_emitter_refusal_without_a_request_is_poison() -> None:
    error = from_rest_error(OperationalError("Delete not supported for non key aspect"), "DELETE globalTags of x")
    assert isinstance(error, Poison) and "Delete not supported" in str(error)


def _invalid(kind: str) -> Any:
    from datahub.emitter.mcp import MetadataChangeProposalWrapper
    from datahub.metadata.schema_classes import StatusClass

    dataset = "urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)"
    if kind == "aspect-not-in-the-registry":  # incidents have no status aspect in the entity registry
        return MetadataChangeProposalWrapper(entityUrn=FIRST.entityUrn, aspect=StatusClass(removed=True))
    mcp = MetadataChangeProposalWrapper(entityUrn=dataset, aspect=StatusClass(removed=True))
    obj = mcp.make_mcp()
    obj.aspect.value = b'{"removed": "yes"}'  # not a boolean: the aspect's class refuses it
    return obj


@pytest.mark.parametrize("openapi", [False, True], ids=["restli", "openapi"])
@pytest.mark.parametrize("kind", ["aspect-not-in-the-registry", "invalid-aspect-value"])
def test_the_fake_gms_refuses_an_invalid_proposal_as_gms_does_and_it_surfaces_as_poison(
    openapi: bool, kind: str
) -> None:
    with FakeGms() as gms:
        writer = RestWriter(gms.url, openapi=openapi)
        writer.write([FIRST])  # Pareis's own proposals pass the same validation
        with pytest.raises(GmsRejected) as caught:
            writer.write([_invalid(kind)])
        assert isinstance(caught.value, Poison) and caught.value.status == 422
        assert len(gms.received) == 1, "nothing of the invalid proposal was applied"


def _incident_on(*entities: str) -> Any:
    from datahub.emitter.mcp import MetadataChangeProposalWrapper
    from datahub.metadata.schema_classes import (
        AuditStampClass,
        IncidentInfoClass,
        IncidentStateClass,
        IncidentStatusClass,
        IncidentTypeClass,
    )

    stamp = AuditStampClass(time=1_700_000_000_000, actor="urn:li:corpuser:pareis")
    info = IncidentInfoClass(
        type=IncidentTypeClass.OPERATIONAL,
        entities=list(entities),
        status=IncidentStatusClass(state=IncidentStateClass.ACTIVE, lastUpdated=stamp),
        created=stamp,
    )
    return MetadataChangeProposalWrapper(entityUrn="urn:li:incident:pareis-caps", aspect=info)


MODEL = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,churn_3,PROD)"
GROUP = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,churn,PROD)"
DATASET = "urn:li:dataset:(urn:li:dataPlatform:postgres,retail.raw.transactions,PROD)"


@pytest.mark.parametrize("openapi", [False, True], ids=["restli", "openapi"])
def test_the_fake_gms_accepts_incidents_only_on_the_entity_types_it_supports(openapi: bool) -> None:
    """DataHub master takes incidents on datasets and ML models, features and feature tables, never on a model
    group, and one entity it refuses fails the whole write; a release refuses the ML types too."""
    with FakeGms(incident_types=INCIDENT_TYPES_MASTER) as master, FakeGms() as older:
        RestWriter(master.url, openapi=openapi).write([_incident_on(DATASET, MODEL)])
        with pytest.raises(GmsRejected, match="mlModelGroup") as caught:
            RestWriter(master.url, openapi=openapi).write([_incident_on(DATASET, GROUP)])
        assert isinstance(caught.value, Poison) and caught.value.status == 422
        assert len(master.received) == 1, "the refused write applied nothing, not even its dataset"
        with pytest.raises(GmsRejected, match="mlModel"):
            RestWriter(older.url, openapi=openapi).write([_incident_on(DATASET, MODEL)])
        RestWriter(older.url, openapi=openapi).write([_incident_on(DATASET)])
        assert len(older.received) == 1
