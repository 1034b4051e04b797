"""Deterministic ids (``core/incident_urn``): DataHub's own ``datahub_guid``, and incident URNs and effect ids
written out without the JSON encoder's walk yet equal to the guid of their objects."""

from __future__ import annotations

import pytest
from datahub.emitter.mce_builder import datahub_guid as acryl_guid

from pareis.core.incident_urn import INCIDENT_PREFIX, datahub_guid, effect_id, incident_urn

TEXTS = [
    "urn:li:dataset:(urn:li:dataPlatform:snowflake,analytics.public.orders,PROD)",
    'quote " and backslash \\ and slash /',
    "non-ASCII é ü 😀 \u2028 and control \x00\x1f\t\n",
    "",
]


@pytest.mark.parametrize("text", TEXTS)
def test_ids_are_the_datahub_guid_of_their_objects(text: str) -> None:
    for ms in (0, -5, 1_714_564_800_000, 10**18):
        obj = {"dataset": text, "first_failure_ms": ms}
        assert datahub_guid(obj) == acryl_guid(obj)
        assert incident_urn(text, ms) == INCIDENT_PREFIX + acryl_guid(obj)
        for kind in ("open", "update", "resolve", text):
            assert effect_id(text, kind, ms) == acryl_guid({"incident": text, "kind": kind, "revision": ms})
