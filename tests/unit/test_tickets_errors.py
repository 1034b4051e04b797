"""How each ticket API's failures reach Pareis: through the production clients, against the fake servers."""

from __future__ import annotations

import base64
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import SecretStr

from pareis.core.impact import Severity
from pareis.errors import Fatal, Poison, Retriable
from pareis.tickets.failures import Rejected, Unauthorized
from pareis.tickets.port import IncidentTicket
from pareis.tickets.retry import RetryPolicy
from tests.support.fake_http import FakeServer, Reply
from tests.support.fake_linear import FakeLinear
from tests.support.tickets_harness import HTTP_TOOLS, Tool, tool

INCIDENT = IncidentTicket("urn:li:incident:pareis-9d8c7b", "orders.amount is NULL", "Body.", Severity.MEDIUM)


@pytest.fixture(params=HTTP_TOOLS)
def subject(request: pytest.FixtureRequest) -> Iterator[Tool]:
    with tool(request.param) as t:
        yield t


def server(subject: Tool) -> FakeServer:
    assert subject.server is not None
    return subject.server


def recording_policy(**options: Any) -> tuple[RetryPolicy, list[float]]:
    slept: list[float] = []
    return RetryPolicy(sleep=slept.append, jitter=0.0, **options), slept


def test_429_retry_after_is_carried_and_honoured(subject: Tool) -> None:
    server(subject).fail_next(429, retry_after="2")
    policy, slept = recording_policy()

    ref = policy.call(lambda: subject.ticketer.open(INCIDENT))

    assert slept == [2.0]
    assert subject.count() == 1
    assert subject.ticketer.find(INCIDENT.incident_urn) == ref


def test_429_alone_is_retriable_with_the_hint(subject: Tool) -> None:
    server(subject).fail_next(429, retry_after="7")

    with pytest.raises(Retriable) as caught:
        subject.ticketer.find(INCIDENT.incident_urn)

    assert caught.value.retry_after == 7.0


def test_5xx_is_retried_with_exponential_backoff(subject: Tool) -> None:
    server(subject).fail_next(503, times=2)
    policy, slept = recording_policy(initial_s=0.25, multiplier=2.0)

    ref = policy.call(lambda: subject.ticketer.open(INCIDENT))

    assert slept == [0.25, 0.5]
    assert subject.count() == 1
    assert subject.ticketer.find(INCIDENT.incident_urn) == ref


def test_retries_are_bounded_then_the_retriable_is_reraised(subject: Tool) -> None:
    server(subject).fail_next(502, times=10)
    policy, slept = recording_policy(attempts=3)

    with pytest.raises(Retriable):
        policy.call(lambda: subject.ticketer.open(INCIDENT))

    assert len(server(subject).requests) == 3
    assert len(slept) == 2
    assert subject.count() == 0


def test_an_injected_4xx_is_poison_with_status_and_body_and_not_retried(subject: Tool) -> None:
    server(subject).fail_next(404, reply=Reply.text(404, "no such route: the body says why"))
    policy, slept = recording_policy()

    with pytest.raises(Rejected) as caught:
        policy.call(lambda: subject.ticketer.find(INCIDENT.incident_urn))

    assert isinstance(caught.value, Poison)
    assert caught.value.status == 404
    assert "no such route: the body says why" in caught.value.body  # slack-sdk wraps a non-JSON body
    assert slept == []
    assert len(server(subject).requests) == 1


def test_a_refused_credential_is_fatal_and_the_server_checked_the_header(subject: Tool) -> None:
    wrong = {"slack": "token", "jira": "token", "linear": "api_key"}[subject.name]
    ticketer = subject.make(**{wrong: SecretStr("not-the-secret")})

    with pytest.raises(Unauthorized) as caught:
        ticketer.open(INCIDENT)

    assert isinstance(caught.value, Fatal)
    assert subject.count() == 0
    assert caught.value.status == {"slack": 200, "jira": 401, "linear": 400}[subject.name]


def test_every_request_carries_the_documented_auth_header(subject: Tool) -> None:
    ref = subject.ticketer.open(INCIDENT)
    mark = subject.ticketer.mark(ref)
    subject.ticketer.comment(ref, "update", "effect-1")
    subject.ticketer.posted(ref, "effect-1", mark)
    subject.ticketer.close(ref)

    expected = {
        "slack": "Bearer xoxb-test-token",
        "jira": "Basic " + base64.b64encode(b"bot@example.com:jira-token").decode(),
        "linear": "lin_api_test",
    }[subject.name]
    received = {r.headers.get("authorization") for r in server(subject).requests}
    assert received == {expected}


def test_nothing_listening_is_retriable(subject: Tool) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # the probe is closed: nothing listens on that port any more
    where = {
        "slack": {"base_url": f"http://127.0.0.1:{port}/api/"},
        "jira": {"url": f"http://127.0.0.1:{port}"},
        "linear": {"url": f"http://127.0.0.1:{port}/graphql"},
    }[subject.name]

    with pytest.raises(Retriable):
        subject.make(**where).open(INCIDENT)


def test_jira_field_errors_are_poison_with_the_body() -> None:
    with tool("jira") as jira:
        ticketer = jira.make(issue_type="Epic")

        with pytest.raises(Rejected) as caught:
            ticketer.open(INCIDENT)

    assert caught.value.status == 400
    assert '"issuetype": "valid issue type is required"' in caught.value.body
    assert jira.count() == 0


def test_jira_non_json_success_is_retriable() -> None:
    with tool("jira") as jira:
        server(jira).fail_next(200, reply=Reply.text(200, "<html>captive portal</html>"))

        with pytest.raises(Retriable):
            jira.ticketer.find(INCIDENT.incident_urn)


def test_linear_input_errors_are_poison_with_the_body() -> None:
    with tool("linear") as linear:
        ticketer = linear.make(team_id="00000000-0000-4000-8000-000000000000")

        with pytest.raises(Rejected) as caught:
            ticketer.open(INCIDENT)

    assert caught.value.status == 400
    assert "Entity not found: Team" in caught.value.body
    assert "INVALID_INPUT" in caught.value.body


def test_linear_ratelimited_code_waits_until_the_reset_header() -> None:
    with tool("linear") as linear:
        fake = server(linear)
        assert isinstance(fake, FakeLinear)
        fake.fail_next(400, reply=fake.rate_limited_reply(reset_in_s=3.0))

        with pytest.raises(Retriable) as caught:
            linear.ticketer.find(INCIDENT.incident_urn)

    assert caught.value.retry_after is not None
    assert 2.0 < caught.value.retry_after <= 3.0


def test_slack_error_codes_are_poison_with_the_body() -> None:
    with tool("slack") as slack:
        ticketer = slack.make(channel="C0DOESNOTEXIST")

        with pytest.raises(Rejected) as caught:
            ticketer.open(INCIDENT)

    assert caught.value.status == 200
    assert '"error": "channel_not_found"' in caught.value.body


def test_slack_ratelimited_is_retriable_with_retry_after() -> None:
    with tool("slack") as slack:
        server(slack).fail_next(429, retry_after="30")
        policy, slept = recording_policy(max_s=60.0)

        policy.call(lambda: slack.ticketer.open(INCIDENT))

    assert slept == [30.0]
    assert slack.count() == 1


def test_a_success_answer_without_what_the_api_documents_is_retriable(subject: Tool) -> None:
    hollow = {
        "slack": Reply.json(200, {"ok": True}),
        "jira": Reply.json(201, {"self": "somewhere"}),
        "linear": Reply.json(200, {"data": {"issueCreate": {"success": True}}}),
    }[subject.name]
    creating = {"slack": b"chat.postMessage", "jira": b"POST /rest/api/3/issue", "linear": b"PareisIssueCreate"}
    marker = creating[subject.name]
    server(subject).fail_next(
        hollow.status, reply=hollow, when=lambda r: marker in f"{r.method} {r.path}".encode() + r.body
    )

    with pytest.raises(Retriable):
        subject.ticketer.open(INCIDENT)
