"""Typed aspects on demand, and the facts about aspects the codec needs (which are timeseries).

The change log carries aspects as Pegasus JSON. Most consumers read that JSON directly (orjson dicts); where an
acryl-datahub object is wanted, :func:`typed_aspect` builds it the one correct way: ``post_json_transform`` then
``from_obj`` — without the transform, avrogen silently picks the first branch of every record union (a
``NumberType`` field type becomes ``BooleanType``; reference §11).

acryl-datahub's generated classes are imported on first use (about a second), not at import.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import orjson

from pareis.errors import DecodeError, Origin

JSON_CONTENT_TYPE = "application/json"
JSON_PATCH_CONTENT_TYPE = "application/json-patch+json"


@functools.cache
def aspect_classes() -> Mapping[str, type[Any]]:
    """acryl-datahub's aspect classes by aspect name."""
    from datahub.emitter.aspect import ASPECT_MAP

    return dict(ASPECT_MAP)


@functools.cache
def timeseries_aspects() -> frozenset[str]:
    """Names of the timeseries aspects (``ASPECT_TYPE == "timeseries"``), which GMS logs to the timeseries topic."""
    return frozenset(name for name, cls in aspect_classes().items() if cls.ASPECT_TYPE == "timeseries")


def is_timeseries(aspect_name: str | None) -> bool:
    """Whether GMS routes ``aspect_name`` to the timeseries change log (unknown names: False, i.e. versioned)."""
    return aspect_name in timeseries_aspects()


def mcl_topic(aspect_name: str | None, *, versioned: str, timeseries: str) -> str:
    """The change-log topic GMS writes an MCL of ``aspect_name`` to (``KafkaEventProducer`` routing)."""
    return timeseries if is_timeseries(aspect_name) else versioned


def typed_aspect(aspect_name: str, json_obj: Any, origin: Origin | None = None, *, validate: bool = True) -> Any:
    """The acryl-datahub object (e.g. ``UpstreamLineageClass``) for an aspect's parsed Pegasus JSON.

    Raises DecodeError("unknown-aspect") for a name acryl-datahub doesn't know, DecodeError("aspect-json") when
    the JSON does not fit the class. ``from_obj`` alone accepts a string where a list belongs; ``validate``
    (avrogen's type check) refuses it — pass False to accept what a newer server writes (e.g. an enum symbol
    this acryl-datahub doesn't know) at the price of that leniency.
    """
    from datahub.emitter.serialization_helper import post_json_transform

    cls = aspect_classes().get(aspect_name)
    if cls is None:
        raise DecodeError("unknown-aspect", f"acryl-datahub has no aspect named {aspect_name!r}", origin)
    if not isinstance(json_obj, dict):
        raise DecodeError("aspect-json", f"{aspect_name} is a {type(json_obj).__name__}, not an object", origin)
    try:
        typed = cls.from_obj(post_json_transform(json_obj))
    except Exception as exc:  # avrogen raises KeyError, TypeError, ValueError, AttributeError on a misfit
        raise DecodeError("aspect-json", f"{aspect_name} does not fit {cls.__name__}: {exc!r}", origin) from exc
    if validate and not typed.validate():
        raise DecodeError("aspect-json", f"{aspect_name} does not validate as {cls.__name__}", origin)
    return typed


def pegasus_json(aspect: Any) -> bytes:
    """An acryl-datahub aspect object as Pegasus JSON bytes (``pre_json_transform`` of ``to_obj()``), compact
    as GMS writes it."""
    from datahub.emitter.serialization_helper import pre_json_transform

    return orjson.dumps(pre_json_transform(aspect.to_obj()))
