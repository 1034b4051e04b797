"""The wire formats of Pareis's own topics: signals (``pareis.signals.v1``) and effects (``pareis.effects.v1``).

Both are JSON objects encoded with orjson, keys sorted (equal values ⇔ equal bytes), with a format version ``"v"``.
Their JSON Schemas are ``schemas/pareis/signal.v1.schema.json`` and ``schemas/pareis/effect.v1.schema.json``;
the decoders here check the same rules by hand (faster, and with a sentence naming the faulty field). A reader
accepts its own major version only: any other ``"v"`` is an error, never a guess.

Decoding errors are :class:`~pareis.errors.DecodeError` (Poison) with reason ``signal-json`` / ``effect-json``
(not JSON) or ``signal-shape`` / ``effect-shape`` (valid JSON, wrong fields), located at the message.

* **Signal** — key: the incident key (the asserted dataset resolved through siblings). A *run* signal (the
  assertions role) carries the run as :meth:`~pareis.core.runs.AssertionRun.to_json` and ``logged_ms``, the change
  log's time of the run event (the incidents role's clock, so a replay yields byte-identical outputs). A *lineage*
  signal (the lineage role, ``"kind": "lineage"``) says a lineage change touched the key's active incident: its
  ``entities`` (the changed entities, for the ticket comment) and ``logged_ms``, the change log's time of the
  change. A value without ``kind`` is a run signal (the format before lineage signals existed).
* **Effect** — key: the incident URN (one incident's effects stay ordered); value: one of ``ticket.open``,
  ``ticket.comment``, ``ticket.close`` or ``datahub.write`` (one proposal, for ``write_path=rest``), each with a
  deterministic ``effect_id`` for the effects role's ledger. A ticket effect carries ``at_ms``, the time of the
  intent that caused it (the stamp of what the effects role mirrors into DataHub: the ticket's link, each comment
  as a note); an open carries the incident's ``brief`` (:class:`pareis.core.brief.Brief`, decision first), which
  each tool renders its own way, and a close the ticket as of the resolve (``ticket``: its brief as of the heal,
  for a tool whose close rewrites the ticket). They are absent from effects written before they existed
  (``at_ms`` then reads as 0, the tools render ``body``, Slack's close keeps the message's blocks).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

import orjson

from pareis.contracts.records import OutRecord
from pareis.core.brief import Brief
from pareis.core.impact import Severity
from pareis.core.intents import PriorFields
from pareis.core.lifecycle import Signal
from pareis.core.owners import Owner
from pareis.core.runs import AssertionRun, InvalidRun
from pareis.errors import DecodeError, Origin
from pareis.tickets.port import IncidentTicket

SIGNAL_VERSION = 1
EFFECT_VERSION = 1


@dataclass(frozen=True)
class RunSignal:
    """A recorded assertion run, forwarded to the owner of its incident key.

    ``dataset``: the incident key; ``run.dataset`` stays the assertee as DataHub wrote it. ``logged_ms``: when
    the change log recorded the run event.
    """

    dataset: str
    run: AssertionRun
    logged_ms: int

    @property
    def signal(self) -> Signal:
        return Signal(self.dataset, self.run)

    def to_json(self) -> dict[str, Any]:
        return {"dataset": self.dataset, "logged_ms": self.logged_ms, "run": self.run.to_json(), "v": SIGNAL_VERSION}


LINEAGE_KIND = "lineage"
MAX_SIGNAL_ENTITIES = 20
"""A lineage signal names at most this many changed entities (the first, sorted): a bulk re-ingestion stays one
small signal per incident."""


@dataclass(frozen=True)
class LineageSignal:
    """Lineage changes touched the active incident of ``dataset`` (DESIGN §3, live re-evaluation).

    ``entities``: the changed entities (sorted, at most :data:`MAX_SIGNAL_ENTITIES`); ``logged_ms``: when the change
    log recorded the latest of the changes.
    """

    dataset: str
    entities: tuple[str, ...]
    logged_ms: int

    def to_json(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "entities": list(self.entities),
            "kind": LINEAGE_KIND,
            "logged_ms": self.logged_ms,
            "v": SIGNAL_VERSION,
        }


AnySignal: TypeAlias = RunSignal | LineageSignal
"""What ``pareis.signals.v1`` carries."""


@dataclass(frozen=True)
class TicketOpen:
    """Open ``ticket`` (the ticketers' own record of what a ticket says) in every configured tool."""

    effect_id: str
    ticket: IncidentTicket
    at_ms: int = 0

    kind = "ticket.open"

    # Views of the ticket's fields (it holds them once), for readers of the effect.
    @property
    def incident(self) -> str:
        return self.ticket.incident_urn

    @property
    def title(self) -> str:
        return self.ticket.title

    @property
    def body(self) -> str:
        return self.ticket.body

    @property
    def severity(self) -> Severity:
        return self.ticket.severity

    @property
    def url(self) -> str | None:
        return self.ticket.url

    def to_json(self) -> dict[str, Any]:
        return {**_common(self), "at_ms": self.at_ms, **_ticket_json(self.ticket)}


@dataclass(frozen=True)
class TicketComment:
    """Comment on the incident's tickets."""

    effect_id: str
    incident: str
    text: str
    at_ms: int = 0

    kind = "ticket.comment"

    def to_json(self) -> dict[str, Any]:
        return {**_common(self), "at_ms": self.at_ms, "text": self.text}


@dataclass(frozen=True)
class TicketClose:
    """Comment on and close the incident's tickets; ``ticket``: what a ticket says as of the resolve (its brief as of
    the heal), for a tool whose close rewrites the ticket (Slack); None in effects written before it existed."""

    effect_id: str
    incident: str
    text: str
    at_ms: int = 0
    ticket: IncidentTicket | None = None

    kind = "ticket.close"

    def to_json(self) -> dict[str, Any]:
        final = {"ticket": _ticket_json(self.ticket)} if self.ticket is not None else {}
        return {**_common(self), "at_ms": self.at_ms, "text": self.text, **final}


@dataclass(frozen=True)
class DatahubWrite:
    """One proposal for DataHub's REST API. ``mcp``: the proposal's serial form (acryl's ``to_obj()``).

    ``keep`` (an Update's or Resolve's ``incidentInfo``): what Pareis last wrote of the fields people edit; the
    effects role reads the current aspect and keeps those a person changed
    (:mod:`pareis.datahub.writes.incident_merge`).
    """

    effect_id: str
    incident: str
    mcp: Mapping[str, Any]
    keep: PriorFields | None = None

    kind = "datahub.write"

    def to_json(self) -> dict[str, Any]:
        keep = {"keep": self.keep.to_json()} if self.keep is not None else {}
        return {**_common(self), "mcp": dict(self.mcp), **keep}


Effect: TypeAlias = TicketOpen | TicketComment | TicketClose | DatahubWrite


def _ticket_json(ticket: IncidentTicket) -> dict[str, Any]:
    """A ticket's fields in an effect (its incident is the effect's)."""
    owners = {"owners": [o.to_json() for o in ticket.owners]} if ticket.owners else {}
    brief = {"brief": ticket.brief.to_json()} if ticket.brief is not None else {}
    return {
        "body": ticket.body,
        "severity": ticket.severity.value,
        "title": ticket.title,
        "url": ticket.url,
        **owners,
        **brief,
    }


def _common(effect: Effect) -> dict[str, Any]:
    return {"effect_id": effect.effect_id, "incident": effect.incident, "kind": effect.kind, "v": EFFECT_VERSION}


def encode(message: AnySignal | Effect) -> bytes:
    """The message's bytes: orjson, keys sorted."""
    return orjson.dumps(message.to_json(), option=orjson.OPT_SORT_KEYS)


def effect_record(topic: str, effect: Effect) -> OutRecord:
    """The record of ``effect`` on ``topic`` (``pareis.effects.v1``), keyed by its incident."""
    return OutRecord(topic, effect.incident.encode("utf-8"), encode(effect))


# --- decoding ----------------------------------------------------------------------------------------------------
class _Shape:
    """Field readers that raise a located DecodeError naming the field."""

    def __init__(self, what: str, origin: Origin | None) -> None:
        self.what = what
        self.origin = origin

    def fail(self, detail: str) -> DecodeError:
        return DecodeError(f"{self.what}-shape", detail, self.origin)

    def name(self, obj: Mapping[str, Any], key: str) -> str:
        """A non-empty string."""
        value = obj.get(key)
        if not isinstance(value, str) or not value:
            raise self.fail(f"{key} must be a non-empty string, got {value!r}")
        return value

    def opt_name(self, obj: Mapping[str, Any], key: str) -> str | None:
        return None if obj.get(key) is None else self.name(obj, key)

    def text(self, obj: Mapping[str, Any], key: str) -> str:
        value = obj.get(key)
        if not isinstance(value, str):
            raise self.fail(f"{key} must be a string, got {value!r}")
        return value

    def integer(self, obj: Mapping[str, Any], key: str) -> int:
        value = obj.get(key)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(f"{key} must be an integer, got {value!r}")
        return value

    def opt_integer(self, obj: Mapping[str, Any], key: str) -> int:
        """An integer, 0 when absent."""
        return 0 if obj.get(key) is None else self.integer(obj, key)

    def obj(self, obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
        value = obj.get(key)
        if not isinstance(value, dict):
            raise self.fail(f"{key} must be an object, got {type(value).__name__}")
        return value


def _load(value: bytes, what: str, version: int, origin: Origin | None) -> tuple[_Shape, Mapping[str, Any]]:
    try:
        obj = orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        raise DecodeError(f"{what}-json", f"{what} is not JSON: {exc}", origin) from exc
    shape = _Shape(what, origin)
    if not isinstance(obj, dict):
        raise shape.fail(f"a {what} must be a JSON object, got {type(obj).__name__}")
    found = obj.get("v")
    if found != version or isinstance(found, bool):
        raise shape.fail(f"unsupported {what} format version {found!r} (this reader knows {version})")
    return shape, obj


def decode_signal(value: bytes, origin: Origin | None = None) -> AnySignal:
    """A signal from its bytes; DecodeError (Poison) when it is not one (including an unknown ``kind``)."""
    shape, obj = _load(value, "signal", SIGNAL_VERSION, origin)
    kind = obj.get("kind")
    if kind == LINEAGE_KIND:
        entities = obj.get("entities")
        if not isinstance(entities, list) or not all(isinstance(e, str) and e for e in entities):
            raise shape.fail(f"entities must be an array of non-empty strings, got {entities!r}")
        return LineageSignal(shape.name(obj, "dataset"), tuple(entities), shape.integer(obj, "logged_ms"))
    if kind is not None:
        raise shape.fail(f"unknown signal kind {kind!r} (known: {LINEAGE_KIND}, or none for a run)")
    run_obj = shape.obj(obj, "run")
    try:
        run = AssertionRun.from_json(run_obj)
    except InvalidRun as exc:
        raise shape.fail(f"run: {exc}") from exc
    return RunSignal(dataset=shape.name(obj, "dataset"), run=run, logged_ms=shape.integer(obj, "logged_ms"))


def _ticket_open(shape: _Shape, obj: Mapping[str, Any]) -> Effect:
    effect_id, incident = shape.name(obj, "effect_id"), shape.name(obj, "incident")
    return TicketOpen(effect_id, _ticket(shape, obj, incident), shape.opt_integer(obj, "at_ms"))


def _ticket(shape: _Shape, obj: Mapping[str, Any], incident: str) -> IncidentTicket:
    """The ticket whose fields ``obj`` holds (:func:`_ticket_json`)."""
    severity = obj.get("severity")
    if not isinstance(severity, str) or severity not in Severity.__members__:
        raise shape.fail(f"severity must be one of {', '.join(Severity.__members__)}, got {severity!r}")
    title = shape.name(obj, "title")
    owners = obj.get("owners") or []
    if not isinstance(owners, list) or not all(isinstance(o, dict) and isinstance(o.get("urn"), str) for o in owners):
        raise shape.fail(f"owners must be a list of {{urn, email}} objects, got {owners!r}")
    try:
        brief = None if obj.get("brief") is None else Brief.from_json(obj["brief"])
    except TypeError as exc:
        raise shape.fail(f"brief: {exc}") from exc
    try:
        return IncidentTicket(
            incident,
            title,
            shape.text(obj, "body"),
            Severity(severity),
            shape.opt_name(obj, "url"),
            tuple(Owner.from_json(o) for o in owners),
            brief,
        )
    except ValueError as exc:  # the ticket's own rules (a blank title)
        raise shape.fail(str(exc)) from exc


def _ticket_comment(shape: _Shape, obj: Mapping[str, Any]) -> Effect:
    return TicketComment(
        shape.name(obj, "effect_id"),
        shape.name(obj, "incident"),
        shape.text(obj, "text"),
        shape.opt_integer(obj, "at_ms"),
    )


def _ticket_close(shape: _Shape, obj: Mapping[str, Any]) -> Effect:
    incident = shape.name(obj, "incident")
    final = None if obj.get("ticket") is None else _ticket(shape, shape.obj(obj, "ticket"), incident)
    return TicketClose(
        shape.name(obj, "effect_id"), incident, shape.text(obj, "text"), shape.opt_integer(obj, "at_ms"), final
    )


def _datahub_write(shape: _Shape, obj: Mapping[str, Any]) -> Effect:
    mcp = shape.obj(obj, "mcp")
    for key in ("entityUrn", "changeType", "aspectName"):
        shape.name(mcp, key)
    keep = None
    if obj.get("keep") is not None:
        try:
            keep = PriorFields.from_json(shape.obj(obj, "keep"))
        except (TypeError, ValueError) as exc:
            raise shape.fail(f"keep: {exc}") from exc
    return DatahubWrite(shape.name(obj, "effect_id"), shape.name(obj, "incident"), mcp, keep)


_EFFECTS: dict[str, Callable[[_Shape, Mapping[str, Any]], Effect]] = {
    TicketOpen.kind: _ticket_open,
    TicketComment.kind: _ticket_comment,
    TicketClose.kind: _ticket_close,
    DatahubWrite.kind: _datahub_write,
}


def decode_effect(value: bytes, origin: Origin | None = None) -> Effect:
    """An effect from its bytes; DecodeError (Poison) when it is not one (including an unknown ``kind``)."""
    shape, obj = _load(value, "effect", EFFECT_VERSION, origin)
    kind = obj.get("kind")
    reader = _EFFECTS.get(kind) if isinstance(kind, str) else None
    if reader is None:
        raise shape.fail(f"unknown effect kind {kind!r} (known: {', '.join(sorted(_EFFECTS))})")
    return reader(shape, obj)
