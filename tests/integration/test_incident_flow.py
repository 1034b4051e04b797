"""The incidents path through the real runtime: the sample timeline replayed onto Kafka, the lineage, assertions and
incidents roles run by :func:`pareis.compose.process.run_roles` over Redis (standalone, then Redis Cluster), and the
DataHub writes read back from the MetadataChangeProposal topic with ``read_committed`` (the incidents role writes them
transactionally).

Expectations (see tests/unit/test_roles_flow.py for how they follow from the sample's builder): one incident on
the warehouse sibling of stg_transactions, opened at day 6 and resolved at day 8, exactly once each.
"""

from __future__ import annotations

import pytest

from pareis.compose.ports import redis_client
from pareis.compose.replay import kafka_sink, replayer
from pareis.core.lifecycle import Status
from pareis.datahub.wire.codec import Decoder
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.roles.messages import TicketClose, TicketOpen, decode_effect
from pareis.store.incidents_redis import RedisIncidentStore
from tests.support import sample
from tests.support.pipeline import INCIDENT, KEY, caught_up, read_all, running, settings_for
from tests.support.roles import wait_until
from tests.support.stack import NewTopic

pytestmark = pytest.mark.integration


def test_the_sample_incident_is_written_once_opened_and_once_resolved(
    kafka_bootstrap: str, new_topic: NewTopic, new_group: str, redis_backend_url: str
) -> None:
    settings = settings_for(kafka_bootstrap, new_topic, new_group, redis_backend_url)
    topics = settings.kafka.topics
    report = replayer(settings, kafka_sink(settings), default_ms=0).run_files([sample.TIMELINE])
    assert report.published[topics.mcl_timeseries] == 18

    # The lineage index first: an assertion run is keyed through siblings the index must already know.
    with running(["lineage"], settings):
        wait_until(lambda: caught_up(settings, "lineage", topics.mcl_versioned), 120, "lineage to catch up")
    with running(["assertions", "incidents"], settings):
        wait_until(lambda: caught_up(settings, "assertions", topics.mcl_timeseries), 120, "assertions to catch up")
        wait_until(lambda: caught_up(settings, "incidents", topics.signals), 120, "incidents to catch up")

    decoder = Decoder(VendoredSchemaSource())
    infos = []
    for message in read_all(settings, topics.mcp):
        change = decoder.decode_mcp(message.value())
        assert message.key() == (change.entity_urn or "").encode()
        if change.aspect_name == "incidentInfo":
            infos.append((change.entity_urn, change.aspect_json()))
    assert [(urn, info["status"]["state"]) for urn, info in infos] == [(INCIDENT, "ACTIVE"), (INCIDENT, "RESOLVED")]
    assert infos[0][1]["priority"] == 2 and infos[0][1]["entities"][0] == KEY

    effects = [decode_effect(m.value()) for m in read_all(settings, topics.effects)]
    assert [type(e) for e in effects] == [TicketOpen, TicketClose]
    assert {e.incident for e in effects} == {INCIDENT}
    assert read_all(settings, topics.dlq, partitions=1) == []

    with redis_client(redis_backend_url) as client:
        state = RedisIncidentStore(client).get(KEY)
    assert state.status is Status.RESOLVED and state.incident is not None and state.incident.urn == INCIDENT
