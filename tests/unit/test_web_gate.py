"""Mission Control's ``GET /api/gate`` (DESIGN §2.4, continuous learners): on the demo recording, the same bytes
``pareis gate --json`` prints — GO and NO-GO with 200, the exit-2 object with 400 (no model, a bad ``at``), 404 (a
model it cannot evaluate) or 503 (a source is down)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from pareis.answers.sources import Sources
from pareis.cli import app
from pareis.errors import Retriable
from pareis.web.app import create_app, fixed_clock
from tests.support.recorded import RECORDED, mlflow, recorded_sources

FAILING = "2025-10-06T06:00:00Z"  # step 09: the not-null test fails, an incident reaches churn_3
LATER = "2025-10-08T06:00:00Z"  # step 11: healed, churn_4 trained on repaired data
CLOCK_MS = 1_759_903_200_000  # what the app's clock says when a request gives no time (2025-10-08T06:00:00Z)


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(create_app(recorded_sources(), clock=fixed_clock(CLOCK_MS))) as c:
        yield c


def cli(*args: str) -> tuple[int, str]:
    done = CliRunner().invoke(app, ["gate", *args, "--json", "--metadata", str(RECORDED)])
    return done.exit_code, done.stdout


@pytest.mark.parametrize(
    ("model", "at", "status", "code"),
    [
        (mlflow("mlModelGroup", "churn"), FAILING, 200, 1),
        (mlflow("mlModel", "churn_2"), LATER, 200, 0),
        (mlflow("mlModel", "churn_3"), "1759903200000", 200, 1),
        (mlflow("mlModel", "no_such_version"), LATER, 404, 2),
        ("urn:li:dataset:(urn:li:dataPlatform:postgres,retail.raw.transactions,PROD)", LATER, 404, 2),
        (mlflow("mlModelGroup", "churn"), "yesterday", 400, 2),
    ],
)
def test_the_api_answers_the_bytes_the_cli_prints(
    client: TestClient, model: str, at: str, status: int, code: int
) -> None:
    answer = client.get("/api/gate", params={"model": model, "at": at})
    exit_code, printed = cli("--model", model, "--at", at)
    assert (answer.status_code, exit_code) == (status, code), answer.text
    assert answer.headers["content-type"] == "application/json"
    assert answer.text == printed
    assert answer.json()["decision"] == {0: "GO", 1: "NO-GO", 2: "CANNOT_EVALUATE"}[code]


def test_without_a_time_the_app_clock_is_the_time_and_without_a_model_it_is_a_400(client: TestClient) -> None:
    churn = mlflow("mlModelGroup", "churn")
    assert client.get("/api/gate", params={"model": churn}).text == cli("--model", churn, "--at", str(CLOCK_MS))[1]
    missing = client.get("/api/gate")
    assert missing.status_code == 400
    assert missing.json() == {
        "decision": "CANNOT_EVALUATE",
        "exit_code": 2,
        "model": "",
        "reason": "model is required: the URN of a model group or version",
    }


class Down:
    """A lineage index whose server is down: every call raises what the Redis stores raise then."""

    def __getattr__(self, name: str) -> Any:
        def call(*args: object, **kwargs: object) -> None:
            raise Retriable("redis unavailable: Connection refused")

        return call


def test_a_source_that_is_down_is_a_503_that_says_not_to_train() -> None:
    sources = Sources(Down(), Down(), origin="down")  # type: ignore[arg-type]
    with TestClient(create_app(sources, clock=fixed_clock(CLOCK_MS))) as c:
        answer = c.get("/api/gate", params={"model": mlflow("mlModelGroup", "churn")})
    assert answer.status_code == 503
    body = answer.json()
    assert (body["decision"], body["exit_code"]) == ("CANNOT_EVALUATE", 2)
    assert "unavailable" in body["reason"] and body["reason"].endswith("the gate cannot answer, so do not train")
