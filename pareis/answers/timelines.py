"""The runs of an incident key, read as the incidents role reads them (DESIGN §3): a dataset's incident key is its
sibling class's canonical member (:mod:`pareis.core.keys`), and its timeline is every run of every assertion with
runs on a member of the class, in the run history's order (by time, then assertion).

The read side's answers about incidents (:mod:`pareis.answers.incidents`, :mod:`pareis.answers.dossier`,
:mod:`pareis.answers.reach`) find their keys and runs here, then analyse each incident of a timeline with
:func:`pareis.core.analysis.incident_facts`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pareis.core.graph import LineageView
from pareis.core.keys import canonical, sibling_classes
from pareis.core.runs import AssertionRun
from pareis.store.runs import RunHistory

Timeline = tuple[AssertionRun, ...]


def class_timeline(
    view: LineageView, runs: RunHistory, dataset: str, extra: Iterable[str] = (), at_ms: int | None = None
) -> tuple[str, Timeline]:
    """The incident key of ``dataset`` and every run of its sibling class's assertions (and of ``extra``), up to
    ``at_ms`` when given."""
    members = sibling_classes(view, [dataset])[dataset]
    names = {a for member in members for a in runs.assertions_of(member)} | set(extra)
    found = runs.timeline(names, None)
    return canonical(members), tuple(r for r in found if at_ms is None or r.timestamp_ms <= at_ms)


def failing_classes(view: LineageView, runs: RunHistory) -> dict[str, frozenset[str]]:
    """The assertions of every sibling class that can have an incident (a member with a FAILURE run), by incident
    key: only the classes of :meth:`~pareis.store.runs.RunHistory.failed_datasets` are read, with every member's
    assertions in one round trip."""
    classes = sibling_classes(view, runs.failed_datasets())
    members = {canonical(group): group for group in classes.values()}
    of = runs.assertions_by_dataset(m for group in members.values() for m in group)
    return {key: frozenset(a for member in group for a in of[member]) for key, group in members.items()}


def failing_timelines(view: LineageView, runs: RunHistory, at_ms: int | None = None) -> dict[str, Timeline]:
    """The timeline of every sibling class that can have an incident (:func:`failing_classes`), by incident key, up
    to ``at_ms`` when given: three reads of the run history in all."""
    return class_timelines(runs, failing_classes(view, runs), at_ms)


def class_timelines(
    runs: RunHistory, names: Mapping[str, Iterable[str]], at_ms: int | None = None
) -> dict[str, Timeline]:
    """The timeline of each key of ``names`` (its assertions), up to ``at_ms`` when given, from one read of the
    run history: each key's runs in the history's order."""
    wanted = {key: frozenset(found) for key, found in names.items()}
    every = set().union(*wanted.values())
    history = runs.timeline(every, None) if every else []
    places: dict[str, list[int]] = {}  # each assertion's runs, by their places in the history
    for i, r in enumerate(history):
        if at_ms is None or r.timestamp_ms <= at_ms:
            places.setdefault(r.assertion, []).append(i)
    out: dict[str, Timeline] = {}
    for key, found in wanted.items():
        out[key] = tuple(history[i] for i in sorted(i for a in found for i in places.get(a, ())))
    return out
