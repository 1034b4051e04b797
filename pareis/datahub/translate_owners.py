"""Ownership aspects → lineage index attributes (DESIGN §3, Owners).

* ``ownership`` of a dataset, model, model group, feature or feature table → :data:`~pareis.core.graph.Attr.OWNERS`
  (the owner URNs; types and sources are not kept: an incident names owners, whatever kind);
* ``corpUserInfo.email`` of a user → :data:`~pareis.core.graph.Attr.USER_EMAIL` (how a ticket tool finds the
  person: Slack's ``users.lookupByEmail``).

:data:`ENTITY_TYPES` says which entity types each aspect is kept for; others contribute nothing, so the ownership
of charts, dashboards, containers, assertions or tags costs the index nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pareis.core.graph import Attr
from pareis.core.owners import encode_owners
from pareis.datahub.translate_shape import Shape
from pareis.model.lineage import Facts

if TYPE_CHECKING:
    from pareis.datahub.translate import Handler

OWNED_TYPES = frozenset({"dataset", "mlModel", "mlModelGroup", "mlFeature", "mlFeatureTable"})
"""Entity types whose owners an incident names (the failing dataset and its siblings, models and their groups;
features and tables for the read side)."""


def ownership(shape: Shape, entity: str, aspect: Mapping[str, Any]) -> Facts:
    owners = [shape.urn(o.get("owner"), f"owners[{i}].owner") for i, o in enumerate(shape.objs(aspect, "owners", ""))]
    return Facts.of(attrs={Attr.OWNERS: encode_owners(owners)} if owners else {})


def corp_user_info(shape: Shape, entity: str, aspect: Mapping[str, Any]) -> Facts:
    email = shape.opt_str(aspect, "email", "")
    return Facts.of(attrs={Attr.USER_EMAIL: email.strip()} if email and email.strip() else {})


HANDLERS: Mapping[str, Handler] = {"ownership": ownership, "corpUserInfo": corp_user_info}

ENTITY_TYPES: Mapping[str, frozenset[str]] = {"ownership": OWNED_TYPES, "corpUserInfo": frozenset({"corpuser"})}
"""The entity types each aspect of :data:`HANDLERS` is indexed for."""
