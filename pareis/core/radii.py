"""The blast radius of every defined assertion, computed ahead of its failure (DESIGN §2.2, §2.5).

A defined assertion's blast radius (:func:`~pareis.core.blast.blast_radius`) is a function of the lineage index
alone: of the assertion's definition (``assertionInfo``: the datasets and fields it checks) and of the edges,
schemas, removals and models the walk reads — every one of them a fact of an aspect that advances the lineage
*generation* (:data:`~pareis.core.exposure_index.EXPOSURE_ASPECTS`; ``tests/unit/test_exposure_aspects.py``). So the
exposure index's maintainer, which recomputes its snapshot whenever the generation moved, computes every defined
assertion's radius with it (:func:`assertion_radii`), and a warehouse-wide outage finds its thousand radii already
walked: the incidents role reads them instead of walking them (:mod:`pareis.roles.incidents`), and so does the
scores role's retrain gate.

**When a kept radius holds** (:func:`held`): only over a view of the lineage generation it was computed for (the
reader compares the snapshot's generation with the current one, read in the same round trip), and only for the
definition it was computed from, read again from the view (a definition is not a fact that advances the
generation). Anything else is walked, as before: the same answer. A change that lands while a view computes is
followed by an advance of the generation, which the next view sees (:mod:`pareis.core.walk_cache` states the same
rule for the radii one process keeps).

**What is kept**: radii of at most :data:`RADIUS_BUDGET` URNs (a warehouse-wide table's radius, hundreds of thousands
of columns, is walked when it fails: a large blast is one incident, not a thousand).

The encoding (:meth:`AssertionRadius.encode` / :meth:`AssertionRadius.decode`) is the stored form, one string per
assertion; pure, deterministic, sorted.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass

from pareis.core import catalog
from pareis.core.blast import blast_radius
from pareis.core.graph import LineageView, Query, Rel
from pareis.core.impact import BlastRadius, ModelImpact

Definition = tuple[frozenset[str], frozenset[str]]
"""An assertion's definition as a walk reads it: the datasets it checks, the fields it checks."""

ASSERTION_ASPECT = "assertionInfo"
"""The aspect that defines an assertion: every entity with a live record of it is a candidate of
:func:`assertion_radii`."""

RADIUS_BUDGET = 20_000
"""URNs a kept radius holds at most (its columns, datasets and features): ~2 MB of entry. A larger one is walked by
whoever needs it."""


KeptRadii = Callable[[LineageView, Collection[str]], Mapping[str, BlastRadius]]
"""(view, assertions) → the radii kept of those assertions that hold over the view
(:func:`pareis.store.exposure_reader.kept_radii` reads the exposure index's)."""


def definitions(view: LineageView, assertions: Iterable[str]) -> dict[str, Definition]:
    """The definition of each of ``assertions`` as ``view`` reads it (one lookup)."""
    names = sorted(set(assertions))
    targets, fields = view.lookup([Query(Rel.ASSERTS, names), Query(Rel.ASSERTS_COLUMN, names)])
    return {a: (targets[a], fields[a]) for a in names}


def weight(radius: BlastRadius) -> int:
    """The URNs ``radius`` holds, as a budget counts them."""
    return len(radius.columns) + len(radius.datasets) + len(radius.features) + 1


@dataclass(frozen=True)
class AssertionRadius:
    """A defined assertion's blast radius, with the definition it was computed from."""

    assertion: str
    definition: Definition
    radius: BlastRadius

    def encode(self) -> str:
        """Compact canonical JSON: the definition, the radius's sorted lists, its failing and origin columns and
        table-precision features as indexes into its columns and features, each model as ``[urn, group, [feature
        index…], total, precision]``."""
        r = self.radius
        if r.failed_rows is not None:
            raise ValueError("a kept radius has no failed rows: they belong to one incident's runs")
        col = {c: i for i, c in enumerate(r.columns)}
        feat = {f: i for i, f in enumerate(r.features)}
        data = {
            "t": sorted(self.definition[0]),
            "f": sorted(self.definition[1]),
            "c": list(r.columns),
            "fc": [col[c] for c in r.failing_columns],
            "oc": [col[c] for c in r.origin_columns],
            "d": list(r.datasets),
            "ft": list(r.features),
            "tf": [feat[f] for f in r.table_features],
            "m": [
                [m.urn, m.group, [feat[f] for f in m.poisoned_features], m.total_features, m.precision]
                for m in r.models
            ],
            "i": list(r.incomplete),
        }
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def decode(cls, assertion: str, text: str | bytes) -> AssertionRadius:
        """The inverse of :meth:`encode`; ValueError on anything else."""
        try:
            data = json.loads(text)
            columns, features = tuple(data["c"]), tuple(data["ft"])
            models = tuple(
                ModelImpact(str(urn), group, tuple(features[i] for i in poisoned), int(total), precision)
                for urn, group, poisoned, total, precision in data["m"]
            )
            radius = BlastRadius(
                failing_columns=tuple(columns[i] for i in data["fc"]),
                origin_columns=tuple(columns[i] for i in data["oc"]),
                columns=columns,
                datasets=tuple(data["d"]),
                features=features,
                models=models,
                table_features=tuple(features[i] for i in data["tf"]),
                incomplete=tuple(data["i"]),
            )
            definition = (frozenset(data["t"]), frozenset(data["f"]))
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise ValueError(f"malformed radius entry for {assertion}: {exc!r}") from exc
        return cls(assertion, definition, radius)


def assertion_radii(view: LineageView, assertions: Iterable[str]) -> list[AssertionRadius]:
    """The radius of each defined one of ``assertions`` over ``view`` (a :class:`~pareis.core.graph.Memo`), those of
    at most :data:`RADIUS_BUDGET` URNs, by assertion. They are walked together first, into ``view`` (one round trip
    per step of one walk instead of one per step of each); each is then walked on its own over what that read."""
    defined = sorted(catalog.assertions(view, assertions))
    found = definitions(view, defined)
    if len(defined) > 1:
        blast_radius(view, assertions=defined)
    out = []
    for a in defined:
        radius = blast_radius(view, assertions=[a])
        if weight(radius) <= RADIUS_BUDGET:
            out.append(AssertionRadius(a, found[a], radius))
    return out


def held(view: LineageView, kept: Mapping[str, AssertionRadius]) -> dict[str, BlastRadius]:
    """The radii of ``kept`` (read from a snapshot of ``view``'s lineage generation: the caller checks it) whose
    definition is the one ``view`` reads now."""
    if not kept:
        return {}
    now = definitions(view, kept)
    return {a: entry.radius for a, entry in sorted(kept.items()) if entry.definition == now[a]}
