"""Replies read as text by every Redis adapter (pareis.store.redis_errors.text)."""

from __future__ import annotations

import pytest
import redis

from pareis.errors import Fatal, Retriable
from pareis.store.redis_errors import from_redis, text


def test_text_reads_bytes_and_decoded_replies_alike() -> None:
    assert (
        text(b"urn:li:dataset:(urn:li:dataPlatform:hive,\xc3\xa9,PROD)")
        == "urn:li:dataset:(urn:li:dataPlatform:hive,é,PROD)"
    )
    assert text("already decoded") == "already decoded"


@pytest.mark.parametrize("reply", [b"\xff\xfe not utf-8", 7, None, [b"a"]])
def test_a_reply_that_is_not_text_is_fatal_in_one_line(reply: object) -> None:
    with pytest.raises(Fatal, match="unexpected reply from redis") as caught:
        text(reply)
    assert "\n" not in str(caught.value)


def test_unavailable_is_retriable_and_the_rest_fatal() -> None:
    assert isinstance(from_redis(redis.ConnectionError("refused")), Retriable)
    assert isinstance(from_redis(redis.AuthenticationError("no")), Fatal)
    assert isinstance(from_redis(redis.ResponseError("WRONGTYPE")), Fatal)
