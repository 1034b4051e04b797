"""Deterministic ids: DataHub's ``datahub_guid``, incident URNs and effect ids (DESIGN §3; reference §5).

A replay after a crash must produce the same URN and the same effect ids, so every id here is a pure function
of facts that do not change on replay.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from json.encoder import encode_basestring_ascii
from typing import Any

INCIDENT_PREFIX = "urn:li:incident:pareis-"

_ENCODER = json.JSONEncoder(separators=(",", ":"), sort_keys=True)
"""``json.dumps(obj, separators=(",", ":"), sort_keys=True)``'s encoder, built once (``dumps`` builds one per call
when given options: most of the cost of hashing a small object)."""


def datahub_guid(obj: Mapping[str, Any]) -> str:
    """``md5(json.dumps(obj, separators=(",", ":"), sort_keys=True))`` as hex: DataHub's ``datahub_guid``."""
    return _md5(_ENCODER.encode(obj))


def incident_urn(dataset: str, first_failure_ms: int) -> str:
    """The URN of the incident of ``dataset`` whose failing period began at ``first_failure_ms``:
    ``datahub_guid({"dataset": dataset, "first_failure_ms": first_failure_ms})``."""
    # That object's JSON written out (keys sorted, ASCII, as the encoder writes them): the encoder's walk over a
    # two-key dict cost more than the hash.
    text = f'{{"dataset":{encode_basestring_ascii(dataset)},"first_failure_ms":{int(first_failure_ms)}}}'
    return INCIDENT_PREFIX + _md5(text)


def effect_id(incident: str, kind: str, revision: int) -> str:
    """The id of the ``revision``-th output (``open``, ``update``, ``resolve``) of an incident:
    ``datahub_guid({"incident": incident, "kind": kind, "revision": revision})``."""
    # Written out as incident_urn's object is.
    string = encode_basestring_ascii
    return _md5(f'{{"incident":{string(incident)},"kind":{string(kind)},"revision":{int(revision)}}}')


def _md5(text: str) -> str:
    return hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest()
