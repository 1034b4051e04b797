"""Ownership aspects → lineage index attributes (DESIGN §3, Owners).

* ``ownership`` of a dataset, model, model group, feature or feature table → :data:`~pareis.core.graph.Attr.OWNERS`
  (the owner URNs; types and sources are not kept: an incident names owners, whatever kind);
* ``corpUserInfo.email`` of a user → :data:`~pareis.core.graph.Attr.USER_EMAIL` (how a ticket tool finds the
  person: Slack's ``users.lookupByEmail``), and ``corpUserEditableInfo.email`` (what a person set in DataHub's
  UI, which DataHub shows instead of the ingested one) → :data:`~pareis.core.graph.Attr.USER_EDITED_EMAIL`.

:data:`ENTITY_TYPES` says which entity types each aspect is kept for; others contribute nothing, so the ownership
of charts, dashboards, containers, assertions or tags costs the index nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pareis.contracts.lineage import Facts
from pareis.core.graph import Attr
from pareis.core.owners import encode_owners
from pareis.datahub.translate.shape import Handler, Shape

OWNED_TYPES = frozenset({"dataset", "mlModel", "mlModelGroup", "mlFeature", "mlFeatureTable"})
"""Entity types whose owners an incident names (the failing dataset and its siblings, models and their groups;
features and tables for the read side)."""


def ownership(shape: Shape, entity: str, aspect: Mapping[str, Any]) -> Facts:
    owners = [shape.urn(o.get("owner"), f"owners[{i}].owner") for i, o in enumerate(shape.objs(aspect, "owners", ""))]
    return Facts.of(attrs={Attr.OWNERS: encode_owners(owners)} if owners else {})


def corp_user_info(shape: Shape, entity: str, aspect: Mapping[str, Any]) -> Facts:
    return _email(shape, aspect, Attr.USER_EMAIL)


def corp_user_editable_info(shape: Shape, entity: str, aspect: Mapping[str, Any]) -> Facts:
    return _email(shape, aspect, Attr.USER_EDITED_EMAIL)


def _email(shape: Shape, aspect: Mapping[str, Any], attr: Attr) -> Facts:
    email = shape.opt_str(aspect, "email", "")
    return Facts.of(attrs={attr: email.strip()} if email and email.strip() else {})


HANDLERS: Mapping[str, Handler] = {
    "ownership": ownership,
    "corpUserInfo": corp_user_info,
    "corpUserEditableInfo": corp_user_editable_info,
}

_USERS = frozenset({"corpuser"})
ENTITY_TYPES: Mapping[str, frozenset[str]] = {
    "ownership": OWNED_TYPES,
    "corpUserInfo": _USERS,
    "corpUserEditableInfo": _USERS,
}
"""The entity types each aspect of :data:`HANDLERS` is indexed for."""
