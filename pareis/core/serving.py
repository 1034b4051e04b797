"""Which versions of a model group serve, and what to do about them (DESIGN §2.3 "Serving versions",
"Recommendation"): the decision a person acts on, which every surface shows first.

A version **serves** when a deployment it lists is not known to be out of service, or when one of its aliases is a
serving alias; a removed version never serves. When no version of a group is known to serve, its newest version is
presumed serving and the answer says so (``serving_known`` False).

The **recommendation** of a group at ``at_ms`` looks at every incident that reached it (each with its blind window
and the versions in its blast radius) and at the versions trained at or before ``at_ms``:

* ``ROLL_BACK`` / ``PROMOTE`` — a serving version is CONTAMINATED and a CLEAN version with a known training time
  exists: the target is the newest such version; older than every contaminated serving version → roll back,
  otherwise → promote (after a heal and a clean retrain, the retrain);
* ``RETRAIN`` — a serving version is CONTAMINATED and no such CLEAN version exists;
* ``NONE`` — no serving version is CONTAMINATED (contaminated versions that do not serve: "do not promote").

A version's verdict over several incidents is CONTAMINATED when any incident contaminates it, UNKNOWN when none
does but one cannot tell (unknown training time inside a blast radius), CLEAN otherwise. Pure: every input is passed
in, every output sorted.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pareis.core.contamination import ModelVersion, Verdict, age, known_time, verdict
from pareis.core.names import short_name

DEFAULT_SERVING_ALIASES: tuple[str, ...] = ("champion", "live", "prod", "production")
"""Version aliases that mean "this version serves" when the setting names none (case-insensitive)."""

NOT_IN_SERVICE: frozenset[str] = frozenset({"OUT_OF_SERVICE", "FAILED", "DELETING", "CREATING"})
"""``mlModelDeploymentProperties.status`` values that say a deployment does not serve. Any other value — absent,
``IN_SERVICE``, ``UPDATING``, ``ROLLING_BACK``, ``UNKNOWN``, or one DataHub does not define — counts as serving:
Pareis never assumes a model is safely out of traffic without being told so."""


class Action(StrEnum):
    ROLL_BACK = "ROLL_BACK"
    PROMOTE = "PROMOTE"
    RETRAIN = "RETRAIN"
    NONE = "NONE"


@dataclass(frozen=True)
class Deployment:
    """A deployment a version lists (``mlModelProperties.deployments``). ``status`` None: the deployment's entity
    has no status (or was never ingested)."""

    urn: str
    status: str | None = None

    @property
    def in_service(self) -> bool:
        return self.status is None or self.status.upper() not in NOT_IN_SERVICE


@dataclass(frozen=True)
class VersionFacts:
    """What says whether one version serves: its deployments, its aliases and whether it was removed."""

    version: ModelVersion
    deployments: tuple[Deployment, ...] = ()
    aliases: tuple[str, ...] = ()
    removed: bool = False


@dataclass(frozen=True)
class ServingVia:
    """Why a version counts as serving: a deployment (URN and status) or an alias; neither when presumed."""

    deployment: str | None = None
    status: str | None = None
    alias: str | None = None

    def to_json(self) -> dict[str, Any]:
        if self.deployment is not None:
            return {"deployment": self.deployment, "status": self.status}
        if self.alias is not None:
            return {"alias": self.alias}
        return {"presumed": True}


@dataclass(frozen=True)
class ServingVersion:
    version: ModelVersion
    how: tuple[ServingVia, ...]

    def to_json(self) -> dict[str, Any]:
        return {"how": [h.to_json() for h in self.how], "urn": self.version.urn, "version": self.version.version}


@dataclass(frozen=True)
class Reach:
    """One incident that reached a group, as the recommendation reads it: its blind window and heal as known at the
    evaluation time (``healed_ms`` None: still failing then), and the versions of the group in its blast radius.
    ``first_failure_ms`` (None: not known) lets :meth:`as_of` tell an incident that had not begun yet."""

    incident: str
    last_success_ms: int | None
    healed_ms: int | None
    in_blast: frozenset[str]
    first_failure_ms: int | None = None

    def as_of(self, at_ms: int | None) -> Reach | None:
        """This reach as it stood at ``at_ms`` (None: as it stands): None when the incident had not begun by then;
        a heal after ``at_ms`` not known yet."""
        if at_ms is None:
            return self
        if self.first_failure_ms is not None and self.first_failure_ms > at_ms:
            return None
        if self.healed_ms is not None and self.healed_ms > at_ms:
            return Reach(self.incident, self.last_success_ms, None, self.in_blast, self.first_failure_ms)
        return self

    def to_json(self) -> dict[str, Any]:
        """The stored form (without ``incident``: stores key a reach by its incident)."""
        return {
            "first_failure_ms": self.first_failure_ms,
            "healed_ms": self.healed_ms,
            "in_blast": sorted(self.in_blast),
            "last_success_ms": self.last_success_ms,
        }

    @classmethod
    def from_json(cls, incident: str, data: Any) -> Reach:
        """Inverse of :meth:`to_json`; TypeError/ValueError on a malformed value."""
        if not isinstance(data, Mapping):
            raise TypeError(f"a reach must be an object, got {type(data).__name__}")
        blast = data.get("in_blast")
        if not isinstance(blast, list) or not all(isinstance(v, str) for v in blast):
            raise TypeError(f"a reach's in_blast must be a list of URNs, got {blast!r}")
        times = [data.get(k) for k in ("last_success_ms", "healed_ms", "first_failure_ms")]
        if not all(t is None or (isinstance(t, int) and not isinstance(t, bool)) for t in times):
            raise TypeError(f"a reach's times must be integers or null, got {times!r}")
        return cls(incident, times[0], times[1], frozenset(blast), times[2])


@dataclass(frozen=True)
class Recommendation:
    """The decision for one group (DESIGN §2.3): ``target`` is the version to switch to (ROLL_BACK, PROMOTE),
    ``contaminated`` every contaminated version, serving or not; ``reason`` one sentence a person can act on."""

    group: str
    action: Action
    target: ModelVersion | None
    serving: tuple[ServingVersion, ...]
    serving_known: bool
    contaminated: tuple[ModelVersion, ...]
    incidents: tuple[str, ...]
    reason: str

    @property
    def do_not_promote(self) -> tuple[ModelVersion, ...]:
        """Contaminated versions that do not serve: never to be promoted."""
        serving = {s.version.urn for s in self.serving}
        return tuple(v for v in self.contaminated if v.urn not in serving)

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action.value,
            "contaminated": [v.to_json() for v in self.contaminated],
            "do_not_promote": [v.urn for v in self.do_not_promote],
            "group": self.group,
            "incidents": list(self.incidents),
            "reason": self.reason,
            "serving": [s.to_json() for s in self.serving],
            "serving_known": self.serving_known,
            "target": None if self.target is None else self.target.to_json(),
        }


def normal_aliases(aliases: Iterable[str]) -> frozenset[str]:
    """The serving-alias setting as compared: case-folded, blanks dropped."""
    return frozenset(a.strip().casefold() for a in aliases if a.strip())


def serving(
    versions: Sequence[VersionFacts], serving_aliases: Collection[str] = DEFAULT_SERVING_ALIASES
) -> tuple[tuple[ServingVersion, ...], bool]:
    """The serving versions of one group (sorted oldest first) and whether that is known; when no version is known
    to serve, the newest live one, presumed (``False``). A removed version never serves."""
    wanted = normal_aliases(serving_aliases)
    found: list[ServingVersion] = []
    for facts in versions:
        if facts.removed:
            continue
        how = [
            ServingVia(deployment=d.urn, status=d.status)
            for d in sorted(facts.deployments, key=_by_urn)
            if d.in_service
        ]
        how.extend(ServingVia(alias=a) for a in sorted(set(facts.aliases)) if a.casefold() in wanted)
        if how:
            found.append(ServingVersion(facts.version, tuple(how)))
    if found:
        return tuple(sorted(found, key=lambda s: age(s.version))), True
    live = [f.version for f in versions if not f.removed]
    if not live:
        return (), False
    return (ServingVersion(max(live, key=age), (ServingVia(),)),), False


def combined_verdicts(versions: Iterable[ModelVersion], reaches: Iterable[Reach]) -> dict[str, Verdict]:
    """Each version's verdict over every incident in ``reaches`` (see the module docstring)."""
    incidents = list(reaches)
    out: dict[str, Verdict] = {}
    for v in versions:
        found = {verdict(v, v.urn in r.in_blast, r.last_success_ms, r.healed_ms) for r in incidents}
        out[v.urn] = next((x for x in (Verdict.CONTAMINATED, Verdict.UNKNOWN) if x in found), Verdict.CLEAN)
    return out


def recommend(
    group: str,
    versions: Sequence[VersionFacts],
    reaches: Sequence[Reach],
    at_ms: int | None,
    serving_aliases: Collection[str] = DEFAULT_SERVING_ALIASES,
    label: Mapping[str, str] | None = None,
) -> Recommendation:
    """The recommendation for ``group`` at ``at_ms`` (module docstring). Versions trained after ``at_ms`` do not
    exist yet (None: every version given exists); a version with an unknown training time is kept (it may serve)
    but is never a target. ``label`` names versions in the reason (default: the version label, else the URN's
    name)."""
    present = [
        f for f in versions if at_ms is None or f.version.trained_at_ms is None or f.version.trained_at_ms <= at_ms
    ]
    verdicts = combined_verdicts([f.version for f in present], reaches)
    live = [f for f in present if not f.removed]
    contaminated = tuple(sorted((f.version for f in live if verdicts[f.version.urn] is Verdict.CONTAMINATED), key=age))
    on, known = serving(present, serving_aliases)
    bad = [s.version for s in on if verdicts[s.version.urn] is Verdict.CONTAMINATED]
    clean = [
        f.version for f in live if verdicts[f.version.urn] is Verdict.CLEAN and known_time(f.version.trained_at_ms)
    ]
    target = max(clean, key=age, default=None) if bad else None
    if not bad:
        action = Action.NONE
    elif target is None:
        action = Action.RETRAIN
    else:
        newest_bad = max((b.trained_at_ms or 0) for b in bad)
        action = Action.PROMOTE if (target.trained_at_ms or 0) > newest_bad else Action.ROLL_BACK
    names = _namer(label)
    incidents = tuple(sorted({r.incident for r in reaches}))
    healed = all(r.healed_ms is not None for r in reaches)
    if live:
        reason = _reason(action, target, bad, on, known, contaminated, healed, names)
    else:
        reason = f"Nothing to switch: {short_name(group)} has no version {'left' if present else 'yet'}."
    return Recommendation(group, action, target, on, known, contaminated, incidents, reason)


def _reason(
    action: Action,
    target: ModelVersion | None,
    bad: Sequence[ModelVersion],
    on: Sequence[ServingVersion],
    known: bool,
    contaminated: Sequence[ModelVersion],
    healed: bool,
    name: Callable[[ModelVersion], str],
) -> str:
    serves = _join(name(b) for b in bad)
    verb = "serves" if len(bad) == 1 else "serve"
    presumed = "" if known else " (presumed serving: no deployment or serving alias is known)"
    bad_serves = f"{serves} {verb} and trained on corrupt data{presumed}"
    if action is Action.ROLL_BACK and target is not None:
        return f"{bad_serves}; roll back to {name(target)}, the newest clean version."
    if action is Action.PROMOTE and target is not None:
        return f"{bad_serves}; promote {name(target)}, trained on clean data."
    if action is Action.RETRAIN:
        when = "now: the data has healed" if healed else "once the data has healed (the retrain gate says when)"
        return f"{bad_serves}, and no clean version exists; retrain {when}."
    current = _join(name(s.version) for s in on) or "no version"
    if contaminated:
        spare = _join(name(v) for v in contaminated)
        return f"Nothing to switch: {current} serving{presumed} is not contaminated; do not promote {spare}."
    return f"Nothing to switch: {current} serving{presumed} is not contaminated."


def _namer(label: Mapping[str, str] | None) -> Callable[[ModelVersion], str]:
    def name(v: ModelVersion) -> str:
        if label and v.urn in label:
            return label[v.urn]
        return short_version_name(v)

    return name


def short_version_name(v: ModelVersion) -> str:
    """A version as a person names it: the model's short name, with its version label when the name lacks it."""
    base = short_name(v.urn)
    if v.version and not base.endswith(v.version):
        return f"{base} (version {v.version})"
    return base


def _join(items: Iterable[str]) -> str:
    names = list(items)
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def _by_urn(d: Deployment) -> str:
    return d.urn
