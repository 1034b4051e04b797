"""DataHub's sibling hook, offline: the ``siblings`` GMS writes between a dbt node and its warehouse table.

In a running DataHub, the MCL hook ``SiblingAssociationHook`` (metadata-jobs/mae-consumer,
``com.linkedin.metadata.kafka.hook.siblings``) links each dbt dataset to the dataset it stands for; the dbt
connector's own files do not always carry those links. :func:`sibling_proposals` applies the hook's rules to one
logged change, so that file readers and ``pareis replay`` (through
:class:`~pareis.datahub.gms.emulator.ChangeLogEmulator`)
index the same siblings the live service sees (DESIGN §2.1):

* only ``dataset`` changes of ``upstreamLineage`` or ``subTypes`` that are not DELETEs trigger it;
* a **dbt** dataset whose ``subTypes`` include ``source`` / ``Source`` and whose ``upstreamLineage`` has exactly one
  upstream, not on dbt, is the sibling of that upstream (a dbt source and its warehouse table);
* a **non-dbt** dataset whose ``upstreamLineage`` has exactly one dbt upstream is the sibling of that dbt node (the
  table a dbt model materialises); with several dbt upstreams nothing is linked;
* when both sides already list each other nothing is written; otherwise the dbt side is set to
  ``{"siblings": [other], "primary": true}`` and the other side gets the dbt node added to its existing siblings (the
  ones that no longer exist dropped), ``primary: false`` — both as UPSERTs by the hook's system actor.

(The hook's third trigger, a re-created dataset key, re-links siblings after a hard delete; the file format has no
key events, so it does not apply here.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pareis.core.fieldpath import key_parts
from pareis.errors import DecodeError

HOOK_ACTOR = "urn:li:corpuser:__datahub_system_sibling_hook"
DBT = "dbt"
SOURCE_SUBTYPES = frozenset({"source", "Source"})
TRIGGERS = frozenset({"upstreamLineage", "subTypes"})

Current = Callable[[str, str], Mapping[str, Any] | None]
"""The current value of (entity URN, aspect name), None when it has none."""


def platform_of(dataset: str) -> str | None:
    """``urn:li:dataset:(urn:li:dataPlatform:dbt,name,PROD)`` → ``"dbt"``; None for anything else."""
    if not dataset.startswith("urn:li:dataset:("):
        return None
    try:
        platform = key_parts(dataset)[0]
    except ValueError:
        return None
    return platform.rsplit(":", 1)[-1] if platform.startswith("urn:li:dataPlatform:") else platform


def sibling_proposals(
    entity_type: str,
    entity: str,
    aspect_name: str,
    change_type: str,
    current: Current,
    exists: Callable[[str], bool],
) -> list[tuple[str, dict[str, Any]]]:
    """The ``siblings`` values the hook writes after one logged change, as (dataset URN, aspect value) in write
    order (dbt side first); empty when it writes nothing. ``current`` must already reflect the change."""
    if entity_type != "dataset" or aspect_name not in TRIGGERS or change_type == "DELETE":
        return []
    platform = platform_of(entity)
    if platform is None:
        return []
    upstreams = _upstreams(entity, current(entity, "upstreamLineage"))
    if platform == DBT:
        types = _array(entity, "subTypes", current(entity, "subTypes"), "typeNames")
        if not SOURCE_SUBTYPES.intersection(t for t in types if isinstance(t, str)):
            return []
        if len(upstreams) != 1 or platform_of(upstreams[0]) == DBT:
            return []
        return _link(entity, upstreams[0], current, exists)
    if aspect_name != "upstreamLineage":
        return []
    dbt = [u for u in upstreams if platform_of(u) == DBT]
    return _link(dbt[0], entity, current, exists) if len(dbt) == 1 else []


def _upstreams(entity: str, lineage: Mapping[str, Any] | None) -> list[str]:
    """The upstream datasets of an ``upstreamLineage`` value, one per entry (as the hook counts them)."""
    ups = _array(entity, "upstreamLineage", lineage, "upstreams")
    return [u["dataset"] for u in ups if isinstance(u, Mapping) and isinstance(u.get("dataset"), str)]


def _array(entity: str, aspect: str, value: Mapping[str, Any] | None, key: str) -> list[Any]:
    """``value[key]``, a list (absent: empty). An aspect GMS would refuse (not an array there) is Poison, as the
    lineage translation refuses it: DecodeError, reason ``aspect-shape``."""
    found = (value or {}).get(key) or []
    if not isinstance(found, list):
        raise DecodeError("aspect-shape", f"{aspect} of {entity}: {key}: expected an array, got {type(found).__name__}")
    return found


def _link(dbt: str, other: str, current: Current, exists: Callable[[str], bool]) -> list[tuple[str, dict[str, Any]]]:
    dbt_siblings = _siblings(dbt, current(dbt, "siblings"))
    other_siblings = _siblings(other, current(other, "siblings"))
    if other in dbt_siblings and dbt in other_siblings:
        return []
    merged = other_siblings if dbt in other_siblings else [*other_siblings, dbt]
    kept = [s for s in merged if s == dbt or exists(s)]
    return [
        (dbt, {"siblings": [other], "primary": True}),
        (other, {"siblings": kept, "primary": False}),
    ]


def _siblings(entity: str, value: Mapping[str, Any] | None) -> list[str]:
    return [s for s in _array(entity, "siblings", value, "siblings") if isinstance(s, str)]
