"""Fixtures the runtime's integration tests share."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient

from tests.support.stack import delete_topics


@pytest.fixture
def later_topic(kafka_admin: AdminClient) -> Iterator[str]:
    """A topic name that does not exist yet (the test creates it); deleted at teardown."""
    name = f"test-later-{uuid.uuid4().hex}"
    yield name
    if name in kafka_admin.list_topics(timeout=10).topics:
        delete_topics(kafka_admin, [name])
