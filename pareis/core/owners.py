"""Who owns what an incident touches (DESIGN §3, Owners): the owners of the failing dataset and of each model.

The lineage index keeps each entity's ``ownership`` as :data:`~pareis.core.graph.Attr.OWNERS` (a JSON list of
owner URNs, ``corpuser`` or ``corpGroup``) and each user's ``corpUserInfo.email`` as
:data:`~pareis.core.graph.Attr.USER_EMAIL` (``corpUserEditableInfo.email`` as
:data:`~pareis.core.graph.Attr.USER_EDITED_EMAIL`). Rules:

* a dataset's owners are its own and its siblings' (dbt writes ownership on the dbt node, the incident is keyed by
  the warehouse table);
* a model version's owners are its own and its group's (MLflow's registered-model owners own every version);
* an owner's email is the one a person set in DataHub's UI (``corpUserEditableInfo.email``, which DataHub shows
  over the ingested one) when indexed, else ``corpUserInfo.email``, else the user id when it is an address
  (``urn:li:corpuser:jdoe@example.com``, what dbt and most connectors write), else unknown.

Everything is sorted, so equal indexes give equal owners, byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pareis.core.graph import Attr, LineageView, siblings_of

USER_PREFIX = "urn:li:corpuser:"
GROUP_PREFIX = "urn:li:corpGroup:"


@dataclass(frozen=True, order=True)
class Owner:
    """One owner: its URN (``urn:li:corpuser:…`` or ``urn:li:corpGroup:…``) and its email when known."""

    urn: str
    email: str | None = None

    @property
    def name(self) -> str:
        """The id part of the URN (``jdoe`` of ``urn:li:corpuser:jdoe``), what a ticket writes when it cannot
        mention the owner."""
        return self.urn.split(":", 3)[3] if self.urn.count(":") >= 3 else self.urn

    @property
    def is_group(self) -> bool:
        return self.urn.startswith(GROUP_PREFIX)

    def to_json(self) -> dict[str, Any]:
        return {"email": self.email, "urn": self.urn}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Owner:
        email = data.get("email")
        return cls(str(data["urn"]), str(email) if email is not None else None)


@dataclass(frozen=True)
class IncidentOwners:
    """The owners an incident names: of the failing dataset, and of each affected model (URN order)."""

    dataset: tuple[Owner, ...] = ()
    models: tuple[tuple[str, tuple[Owner, ...]], ...] = field(default=())

    @property
    def everyone(self) -> tuple[Owner, ...]:
        """Every distinct owner, the dataset's first, then the models' in URN order."""
        seen: dict[str, Owner] = {}
        for owner in (*self.dataset, *(o for _, owners in self.models for o in owners)):
            seen.setdefault(owner.urn, owner)
        return tuple(seen.values())

    @property
    def model_owners(self) -> tuple[Owner, ...]:
        """The distinct owners of the models, in order of :attr:`everyone`, the dataset's owners excluded."""
        mine = {o.urn for o in self.dataset}
        return tuple(o for o in self.everyone if o.urn not in mine)

    def pairs(self, dataset: str) -> tuple[tuple[str, str], ...]:
        """(entity, owner URN) for every owner, ``dataset`` standing for the failing dataset: the compact form
        :class:`pareis.core.lifecycle.Published` compares, so an Update names what changed."""
        out = {(dataset, o.urn) for o in self.dataset}
        out.update((m, o.urn) for m, owners in self.models for o in owners)
        return tuple(sorted(out))

    def to_json(self) -> dict[str, Any]:
        return {
            "dataset": [o.to_json() for o in self.dataset],
            "models": {m: [o.to_json() for o in owners] for m, owners in self.models},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> IncidentOwners:
        models = data.get("models") or {}
        return cls(
            dataset=tuple(Owner.from_json(o) for o in data.get("dataset") or ()),
            models=tuple((m, tuple(Owner.from_json(o) for o in models[m])) for m in sorted(models)),
        )


def encode_owners(urns: Iterable[str]) -> str:
    """The :data:`~pareis.core.graph.Attr.OWNERS` value: sorted distinct URNs as compact JSON."""
    return json.dumps(sorted(set(urns)), separators=(",", ":"), ensure_ascii=False)


def decode_owners(value: str | None) -> tuple[str, ...]:
    """Inverse of :func:`encode_owners`; an absent or malformed value is no owner."""
    if not value:
        return ()
    try:
        urns = json.loads(value)
    except ValueError:
        return ()
    return tuple(sorted({u for u in urns if isinstance(u, str)})) if isinstance(urns, list) else ()


def email_of(urn: str, attrs: Mapping[str, str]) -> str | None:
    """An owner's email: ``corpUserEditableInfo.email``, else ``corpUserInfo.email`` (``attrs``), else a user id
    that is an address, else None."""
    found = attrs.get(Attr.USER_EDITED_EMAIL) or attrs.get(Attr.USER_EMAIL)
    if found:
        return found
    if urn.startswith(USER_PREFIX):
        name = urn[len(USER_PREFIX) :]
        if "@" in name and "." in name.rpartition("@")[2]:
            return name
    return None


def owners_by_entity(
    view: LineageView, datasets: Collection[str], models: Mapping[str, str | None]
) -> dict[str, tuple[Owner, ...]]:
    """The owners of each of ``datasets`` (with its siblings') and of each model of ``models`` (model → group,
    with its group's), resolved to :class:`Owner` values. Three batched reads at most."""
    sibs = siblings_of(view, datasets) if datasets else {}
    holders: dict[str, set[str]] = {d: {d, *sibs.get(d, ())} for d in datasets}
    for model, group in models.items():
        holders[model] = {model, group} if group else {model}
    wanted = sorted({h for hs in holders.values() for h in hs})
    attrs = view.attributes(wanted) if wanted else {}
    direct = {h: decode_owners(attrs.get(h, {}).get(Attr.OWNERS)) for h in wanted}
    urns = sorted({u for owners in direct.values() for u in owners})
    people = view.attributes(urns) if urns else {}
    resolved = {u: Owner(u, email_of(u, people.get(u, {}))) for u in urns}
    return {
        entity: tuple(resolved[u] for u in sorted({u for h in hs for u in direct[h]}))
        for entity, hs in sorted(holders.items())
    }


def incident_owners(
    owners: Mapping[str, tuple[Owner, ...]], datasets: Iterable[str], models: Iterable[str]
) -> IncidentOwners:
    """The owners of an incident on ``datasets`` (its key and assertees) reaching ``models``, from
    :func:`owners_by_entity`'s answer (entities missing there have no owner)."""
    dataset = sorted({o for d in set(datasets) for o in owners.get(d, ())})
    return IncidentOwners(dataset=tuple(dataset), models=tuple((m, owners.get(m, ())) for m in sorted(set(models))))
