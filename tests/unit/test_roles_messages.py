"""Signal and effect formats: round trips, the JSON Schemas in schemas/pareis, and decode errors as Poison."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import StatusClass

from pareis.core.brief import Span, brief
from pareis.core.impact import Severity
from pareis.core.runs import AssertionRun, ResultType
from pareis.errors import DecodeError, Origin, Poison
from pareis.roles.messages import (
    DatahubWrite,
    Effect,
    LineageSignal,
    RunSignal,
    TicketClose,
    TicketComment,
    TicketOpen,
    decode_effect,
    decode_signal,
    encode,
)
from pareis.tickets.port import IncidentTicket
from tests.support.writer_scenario import story

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas" / "pareis"
DATASET = "urn:li:dataset:(urn:li:dataPlatform:postgres,retail.stg,PROD)"
DBT = "urn:li:dataset:(urn:li:dataPlatform:dbt,retail.stg,PROD)"
INCIDENT = "urn:li:incident:pareis-0123456789abcdef0123456789abcdef"
ORIGIN = Origin("pareis.effects.v1", 2, 41)


def validator(name: str) -> jsonschema.protocols.Validator:
    schema = json.loads((SCHEMAS / name).read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


SIGNAL_SCHEMA = validator("signal.v1.schema.json")
EFFECT_SCHEMA = validator("effect.v1.schema.json")


def signal() -> RunSignal:
    run = AssertionRun("urn:li:assertion:a", 1_000, ResultType.FAILURE, DBT, "dbt-1", failed_rows=12)
    return RunSignal(DATASET, run, logged_ms=1_005)


BRIEF = brief(story().open.facts, ui_url="https://datahub", links=[Span("Open in DataHub", "https://datahub/x")])


def effects() -> list[Effect]:
    mcp = MetadataChangeProposalWrapper(entityUrn=DATASET, aspect=StatusClass(removed=False)).to_obj()
    return [
        TicketOpen(
            "e1/ticket", IncidentTicket(INCIDENT, "Title", "Body\n\nmore", Severity.MEDIUM, "https://datahub/x")
        ),
        TicketOpen("e1/ticket", IncidentTicket(INCIDENT, "Title", "", Severity.NONE)),
        TicketComment("e2/ticket", INCIDENT, "changed: severity"),
        TicketClose("e3/ticket", INCIDENT, "postmortem"),
        DatahubWrite("e1/datahub/0", INCIDENT, mcp),
        TicketOpen(
            "e1/ticket",
            IncidentTicket(INCIDENT, BRIEF.headline, "md", Severity.HIGH, "https://datahub/x", (), BRIEF),
            1_700_000_000_000,
        ),
        TicketComment("e2/ticket", INCIDENT, "- churn: now PROMOTE churn_4", 1_700_000_100_000),
        TicketClose("e3/ticket", INCIDENT, "postmortem", 1_700_000_200_000),
        TicketClose(
            "e3/ticket",
            INCIDENT,
            "postmortem",
            1_700_000_200_000,
            IncidentTicket(INCIDENT, BRIEF.headline, "md", Severity.HIGH, None, (), BRIEF),
        ),
    ]


def test_a_ticket_effect_written_before_briefs_and_times_existed_still_decodes() -> None:
    old = {"v": 1, "kind": "ticket.open", "effect_id": "e", "incident": INCIDENT, "title": "T", "body": "b"}
    decoded = decode_effect(orjson.dumps({**old, "severity": "LOW"}))
    assert isinstance(decoded, TicketOpen) and decoded.ticket.brief is None and decoded.at_ms == 0
    comment = decode_effect(
        orjson.dumps({"v": 1, "kind": "ticket.comment", "effect_id": "e", "incident": INCIDENT, "text": "t"})
    )
    assert isinstance(comment, TicketComment) and comment.at_ms == 0


def test_a_signal_round_trips_and_conforms_to_its_schema() -> None:
    value = encode(signal())
    SIGNAL_SCHEMA.validate(orjson.loads(value))
    decoded = decode_signal(value)
    assert decoded == signal()
    assert isinstance(decoded, RunSignal) and decoded.signal.dataset == DATASET
    assert value == orjson.dumps(orjson.loads(value), option=orjson.OPT_SORT_KEYS), "keys are sorted"


@pytest.mark.parametrize("effect", effects(), ids=lambda e: e.kind)
def test_every_effect_kind_round_trips_and_conforms_to_its_schema(effect: Effect) -> None:
    value = encode(effect)
    EFFECT_SCHEMA.validate(orjson.loads(value))
    decoded = decode_effect(value)
    assert decoded == effect
    assert encode(decoded) == value


def _signal_obj() -> dict[str, Any]:
    return orjson.loads(encode(signal()))


def _effect_obj(index: int = 0) -> dict[str, Any]:
    return orjson.loads(encode(effects()[index]))


def _without(obj: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k != key}


BAD_SIGNALS = {
    "not an object": [1, 2],
    "other version": {**_signal_obj(), "v": 2},
    "boolean version": {**_signal_obj(), "v": True},
    "no dataset": _without(_signal_obj(), "dataset"),
    "empty dataset": {**_signal_obj(), "dataset": ""},
    "no logged_ms": _without(_signal_obj(), "logged_ms"),
    "string logged_ms": {**_signal_obj(), "logged_ms": "5"},
    "run not an object": {**_signal_obj(), "run": "x"},
    "unknown result": {**_signal_obj(), "run": {**_signal_obj()["run"], "result": "MAYBE"}},
    "run without timestamp": {**_signal_obj(), "run": _without(_signal_obj()["run"], "timestamp_ms")},
}


@pytest.mark.parametrize("obj", BAD_SIGNALS.values(), ids=BAD_SIGNALS.keys())
def test_the_decoder_rejects_what_the_signal_schema_rejects(obj: Any) -> None:
    assert not SIGNAL_SCHEMA.is_valid(obj)
    with pytest.raises(DecodeError) as caught:
        decode_signal(orjson.dumps(obj), ORIGIN)
    assert caught.value.reason == "signal-shape"
    assert caught.value.origin == ORIGIN


def _lineage_obj() -> dict[str, Any]:
    return orjson.loads(encode(LineageSignal(DATASET, ("urn:li:mlModel:(urn:li:dataPlatform:mlflow,m,PROD)",), 7)))


def test_a_lineage_signal_round_trips_and_conforms_to_its_schema() -> None:
    lineage = LineageSignal(
        DATASET, ("urn:li:mlFeature:(t,a)", "urn:li:mlModel:(urn:li:dataPlatform:mlflow,m,PROD)"), 9
    )
    value = encode(lineage)
    SIGNAL_SCHEMA.validate(orjson.loads(value))
    assert decode_signal(value) == lineage
    assert orjson.loads(value)["kind"] == "lineage"


BAD_LINEAGE_SIGNALS = {
    "unknown kind": {**_lineage_obj(), "kind": "schema"},
    "no entities": _without(_lineage_obj(), "entities"),
    "entities not strings": {**_lineage_obj(), "entities": [1]},
    "no dataset": _without(_lineage_obj(), "dataset"),
    "no logged_ms": _without(_lineage_obj(), "logged_ms"),
}


@pytest.mark.parametrize("obj", BAD_LINEAGE_SIGNALS.values(), ids=BAD_LINEAGE_SIGNALS.keys())
def test_the_decoder_rejects_what_the_schema_rejects_of_lineage_signals(obj: Any) -> None:
    assert not SIGNAL_SCHEMA.is_valid(obj)
    with pytest.raises(DecodeError) as caught:
        decode_signal(orjson.dumps(obj), ORIGIN)
    assert caught.value.reason == "signal-shape"


BAD_EFFECTS = {
    "other version": {**_effect_obj(), "v": 0},
    "unknown kind": {**_effect_obj(), "kind": "ticket.reopen"},
    "no effect id": _without(_effect_obj(), "effect_id"),
    "no incident": _without(_effect_obj(), "incident"),
    "open without title": _without(_effect_obj(), "title"),
    "open with a bad severity": {**_effect_obj(), "severity": "CRITICAL"},
    "open with a numeric body": {**_effect_obj(), "body": 3},
    "comment without text": _without(_effect_obj(2), "text"),
    "close with null text": {**_effect_obj(3), "text": None},
    "write without proposal": _without(_effect_obj(4), "mcp"),
    "open with a malformed brief": {**_effect_obj(5), "brief": {**_effect_obj(5)["brief"], "sections": "x"}},
    "open with a brief span without text": {
        **_effect_obj(5),
        "brief": {**_effect_obj(5)["brief"], "links": [{"url": "https://x"}]},
    },
    "comment with a string time": {**_effect_obj(6), "at_ms": "5"},
    "close with a ticket without title": {**_effect_obj(8), "ticket": _without(_effect_obj(8)["ticket"], "title")},
    "write of a proposal without entity": {**_effect_obj(4), "mcp": _without(_effect_obj(4)["mcp"], "entityUrn")},
}


@pytest.mark.parametrize("obj", BAD_EFFECTS.values(), ids=BAD_EFFECTS.keys())
def test_the_decoder_rejects_what_the_effect_schema_rejects(obj: Any) -> None:
    assert not EFFECT_SCHEMA.is_valid(obj)
    with pytest.raises(DecodeError) as caught:
        decode_effect(orjson.dumps(obj), ORIGIN)
    assert caught.value.reason == "effect-shape"
    assert isinstance(caught.value, Poison)


def test_a_ticket_the_ticket_port_refuses_is_poison_not_a_crash() -> None:
    """A blank title passes the JSON shape but not :class:`IncidentTicket`'s rule: the decoder says so as Poison."""
    with pytest.raises(DecodeError, match="title must not be empty") as caught:
        decode_effect(orjson.dumps({**_effect_obj(), "title": "   "}), ORIGIN)
    assert caught.value.reason == "effect-shape"


@pytest.mark.parametrize("value", [b"", b"{", b"\xff\xfe", b"null"])
def test_bytes_that_are_not_a_json_object_are_poison(value: bytes) -> None:
    with pytest.raises(DecodeError) as caught:
        decode_signal(value, ORIGIN)
    assert caught.value.reason in {"signal-json", "signal-shape"}
    with pytest.raises(DecodeError):
        decode_effect(value, ORIGIN)
