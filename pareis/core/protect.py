"""Protect: reliability scores and ranked gaps for a set of models or datasets, in two pure steps (DESIGN §2.5).

:func:`survey` reads the lineage view once (batched) and says what is upstream: the sibling classes of the
datasets feeding the targets, their columns, which of them feed models, which are tested, and which assertions
check them. The caller then fetches those assertions' runs (a port the core does not know) and the affected
columns of past incidents, and :func:`assess` turns it all into scores and gaps. Deterministic; lists sorted.

A sibling class (a dbt node and its warehouse table) is scored once and each member reported with that score; its
columns are one column per field path. A gap is reported on the class's dbt member when it has one (tests are
written there), else on the class's key member (the smallest non-dbt URN).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from pareis.core import catalog, dbt_tests, reliability
from pareis.core.dbt_tests import ColumnFacts, DbtNode
from pareis.core.exposure import Exposed, exposure
from pareis.core.fieldpath import column_urn, index_parent, index_path, path_in
from pareis.core.gaps import Gap, SuggestedTest, distinct_groups, matching_incidents, ranked
from pareis.core.graph import Attr, LineageView, columns_of, memoised, union
from pareis.core.keys import sibling_classes
from pareis.core.reliability import Score
from pareis.core.runs import AssertionRun
from pareis.core.upstream import ModelUpstream, model_upstream
from pareis.core.walk_cache import WalkCache

DBT_PREFIX = "urn:li:dataset:(urn:li:dataPlatform:dbt,"


def class_key(members: Iterable[str]) -> str:
    """The key member of a sibling class: the smallest non-dbt URN, else the smallest (as incidents are keyed)."""
    return min(members, key=lambda urn: (urn.startswith(DBT_PREFIX), urn))


@dataclass(frozen=True)
class DatasetClass:
    """One sibling class upstream of the targets."""

    key: str
    members: tuple[str, ...]
    paths: Mapping[str, tuple[str, ...]]
    """Field path → the members' columns of that path."""
    feeding: frozenset[str]
    """Field paths whose columns feed a model."""
    tested: frozenset[str]
    """Field paths an assertion names."""
    assertions: tuple[str, ...]
    """Assertions the index defines on any member (the caller adds those with runs on a member)."""
    dbt_member: str | None
    node: DbtNode
    has_schema: bool = True
    """Whether a schema of a member is known (coverage of a class without one is unknown, DESIGN §2.5)."""


@dataclass(frozen=True)
class Survey:
    """What :func:`survey` found; the input of :func:`assess`."""

    targets: tuple[str, ...]
    """Model versions scored."""
    upstream: Mapping[str, ModelUpstream]
    classes: Mapping[str, DatasetClass]
    """Class key → class."""
    class_of: Mapping[str, str]
    """Member dataset → class key."""
    gap_paths: Mapping[str, frozenset[str]]
    """Class key → field paths eligible as gaps (feeding the targets, or any model for a dataset target)."""
    features: Mapping[str, tuple[str, ...]]
    models: Mapping[str, tuple[str, ...]]
    """Column → features / model versions downstream."""
    groups: Mapping[str, str | None]
    facts: Mapping[str, ColumnFacts]
    """Gap column → its facts, merged over its class."""
    nodes: Mapping[str, DbtNode]
    """Dataset → its dbt node (for relationships targets)."""
    declared_feeding: Mapping[str, frozenset[str]]
    """Class key → the field paths of its members' schemas (not the columns only lineage names) that feed a model
    or feature: what :func:`model_scores` needs to answer for a subset of the targets."""


def survey(
    view: LineageView,
    *,
    models: Iterable[str] = (),
    datasets: Iterable[str] = (),
    exposed: Exposed = exposure,
    walks: WalkCache[ModelUpstream] | None = None,
) -> Survey:
    """The upstream of ``models`` (model versions) and the classes of ``datasets``. ``exposed`` says what is
    downstream of columns: the walk (:func:`~pareis.core.exposure.exposure`, the default) or a read of the exposure
    index (:func:`pareis.core.exposure_index.exposure_of`), which answer alike. ``walks``: the upstreams earlier
    views of ``view``'s generation walked (:func:`~pareis.core.upstream.model_upstream`)."""
    memo = memoised(view)
    targets = tuple(sorted(set(models)))
    ups = model_upstream(memo, targets, walks=walks)
    wanted: dict[str, set[str]] = {}
    for up in ups.values():
        for c in up.columns:
            wanted.setdefault(index_parent(c), set()).add(index_path(c))
        for d in up.table_datasets:
            wanted.setdefault(d, set())
    explicit = set(datasets)
    classes_of = sibling_classes(memo, set(wanted) | explicit)
    members = sorted(union(classes_of))
    schemas = columns_of(memo, members)
    attrs = memo.attributes(members)
    # Each column's dataset, known without parsing it: a schema's columns are its dataset's (the index spells them
    # so), and a column only lineage names is built from its dataset.
    parent = {c: d for d, cols in schemas.items() for c in cols}
    for d, ps in wanted.items():
        for p in ps:
            parent.setdefault(column_urn(d, p), d)
    every = parent.keys()
    exp = exposed(memo, every, parent)
    on = catalog.assertions_on(memo, members)
    defs = catalog.assertions(memo, union(on))
    classes: dict[str, DatasetClass] = {}
    class_of: dict[str, str] = {}
    gap_paths: dict[str, frozenset[str]] = {}
    by_parent: dict[str, list[str]] = {}
    for c, d in parent.items():
        by_parent.setdefault(d, []).append(c)
    for cols in by_parent.values():
        cols.sort()
    declared: dict[str, frozenset[str]] = {}
    feeds = {c for c in every if exp.models[c] or exp.features[c]}
    declared_cols = {c for cols in schemas.values() for c in cols}
    for group in sorted({frozenset(m) for m in classes_of.values()}, key=lambda g: class_key(g)):
        key = class_key(group)
        ordered = tuple(sorted(group))
        paths: dict[str, list[str]] = {}
        own: set[str] = set()  # the field paths of its schemas' columns that feed
        for m in ordered:
            for c in by_parent.get(m, ()):
                path = path_in(c, m)
                paths.setdefault(path, []).append(c)
                if c in feeds and c in declared_cols:
                    own.add(path)
        for cols in paths.values():
            cols.sort()
        feeding = frozenset(p for p, cols in paths.items() if any(c in feeds for c in cols))
        names = sorted({a for m in ordered for a in on.get(m, ())})
        tested = frozenset(
            index_path(c) for a in names if a in defs for c in defs[a].columns if index_parent(c) in group
        )
        dbt = sorted(m for m in ordered if attrs[m].get(Attr.DBT_UNIQUE_ID) or m.startswith(DBT_PREFIX))
        dbt_member = dbt[0] if dbt else None
        node = dbt_tests.dbt_node(dbt_member or key, attrs[dbt_member].get(Attr.DBT_UNIQUE_ID) if dbt_member else None)
        classes[key] = DatasetClass(
            key,
            ordered,
            {p: tuple(cs) for p, cs in paths.items()},
            feeding,
            tested,
            tuple(names),
            dbt_member,
            node,
            has_schema=any(schemas.get(m) for m in ordered),
        )
        for m in ordered:
            class_of[m] = key
        eligible = set().union(*(wanted.get(m, set()) for m in ordered))
        if explicit & group:
            eligible |= feeding
        gap_paths[key] = frozenset(eligible & feeding)
        declared[key] = frozenset(own)
    model_set = sorted({m for ms in exp.models.values() for m in ms} | set(targets))
    known = exp.groups or {}
    groups = {m: known[m] for m in model_set if m in known}
    groups.update((m, i.group) for m, i in catalog.models(memo, [m for m in model_set if m not in known]).items())
    nodes = {m: classes[class_of[m]].node for m in members}
    facts: dict[str, ColumnFacts] = {}
    for key, cls in classes.items():
        for p in sorted(gap_paths[key]):
            facts[_gap_column(cls, p)] = _facts(_gap_column(cls, p), cls.paths[p], attrs)
    return Survey(targets, ups, classes, class_of, gap_paths, exp.features, exp.models, groups, facts, nodes, declared)


def _gap_column(cls: DatasetClass, path: str) -> str:
    home = cls.dbt_member or cls.key
    spelled = [c for c in cls.paths[path] if index_parent(c) == home]
    return spelled[0] if spelled else cls.paths[path][0]


def _json(attrs: Mapping[str, str], name: Attr) -> object:
    raw = attrs.get(name)
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _facts(column: str, spellings: Sequence[str], attrs: Mapping[str, Mapping[str, str]]) -> ColumnFacts:
    """A column's facts merged over its sibling spellings: a type, key or foreign key any of them states; the
    profile of the most recently profiled one."""
    kind: str | None = None
    primary = False
    foreign: set[str] = set()
    profile: tuple[int, dict[str, object]] | None = None
    for c in sorted(spellings):
        a = attrs.get(index_parent(c), {})
        path = index_path(c)
        types = _json(a, Attr.SCHEMA_TYPES)
        if kind is None and isinstance(types, dict) and isinstance(types.get(path), str):
            kind = types[path]
        keys = _json(a, Attr.SCHEMA_PRIMARY_KEYS)
        primary |= isinstance(keys, list) and path in keys
        fks = _json(a, Attr.SCHEMA_FOREIGN_KEYS)
        if isinstance(fks, list):
            foreign.update(t for s, t in fks if s == path)
        prof = _json(a, Attr.PROFILE)
        if isinstance(prof, dict) and isinstance(prof.get("fields"), dict) and path in prof["fields"]:
            when = prof.get("time_ms") if isinstance(prof.get("time_ms"), int) else 0
            if profile is None or when > profile[0]:  # type: ignore[operator]
                profile = (when, prof["fields"][path])  # type: ignore[assignment]
    field = profile[1] if profile else {}
    values = field.get("values")
    return ColumnFacts(
        column=column,
        type=kind,
        primary_key=primary,
        foreign=tuple(sorted(foreign)),
        minimum=field.get("min") if isinstance(field.get("min"), str) else None,  # type: ignore[arg-type]
        maximum=field.get("max") if isinstance(field.get("max"), str) else None,  # type: ignore[arg-type]
        values=tuple(values) if isinstance(values, list) else None,
    )


def assess(
    s: Survey,
    runs: Mapping[str, Sequence[AssertionRun]],
    incidents: Mapping[str, frozenset[str]],
    at_ms: int,
    *,
    max_gaps: int | None = None,
    legacy: bool = False,
    existing: Callable[[Sequence[str]], Collection[str]] | None = None,
) -> tuple[list[Score], list[Score], list[Gap], list[dbt_tests.Entry]]:
    """Dataset scores (every member, by URN), model scores (by URN), gaps in rank order (at most ``max_gaps``)
    and the dbt entries of those gaps (for :func:`pareis.core.dbt_tests.schema_yml`).

    ``runs``: class key → the runs of every assertion of the class; ``incidents``: past incident URN → its
    affected columns; ``existing``, when given, says which of the model versions the gaps would name existed at
    ``at_ms`` (those trained later are not named: not there yet).
    """
    by_class = {key: class_score(s, key, runs.get(key, ()), at_ms) for key in s.classes}
    datasets = [
        Score(m, by_class[key].score, by_class[key].components) for key, cls in s.classes.items() for m in cls.members
    ]
    datasets.sort(key=lambda sc: sc.urn)
    models = [_model_score(s, m, by_class) for m in s.targets]
    found = [(cls, p) for key, cls in s.classes.items() for p in sorted(s.gap_paths[key] - cls.tested)]
    named = {m for cls, p in found for c in cls.paths[p] for m in s.models[c]}
    kept = set(existing(sorted(named))) if existing is not None and named else named
    gaps: list[Gap] = []
    for cls, p in found:
        spellings = cls.paths[p]
        column = _gap_column(cls, p)
        feats = sorted(set().union(*(s.features[c] for c in spellings)))
        mods = sorted(set().union(*(s.models[c] for c in spellings)) & kept)
        gaps.append(
            Gap(
                column=column,
                dataset=index_parent(column),
                models=tuple(mods),
                features=tuple(feats),
                groups=distinct_groups(mods, s.groups),
                incidents=matching_incidents(spellings, incidents),
                tests=(),
            )
        )
    top = ranked(gaps, max_gaps)
    entries: list[dbt_tests.Entry] = []
    out: list[Gap] = []
    for g in top:
        cls = s.classes[s.class_of[g.dataset]]
        tests = dbt_tests.choose(s.facts[g.column], s.nodes)
        entry = (cls.node, index_path(g.column), tests)
        entries.append(entry)
        suggested = tuple(
            SuggestedTest(t.name, dbt_tests.schema_yml([(cls.node, index_path(g.column), [t])], legacy=legacy))
            for t in tests
        )
        out.append(Gap(g.column, g.dataset, g.models, g.features, g.groups, g.incidents, suggested))
    return datasets, sorted(models, key=lambda sc: sc.urn), out, entries


def class_score(
    s: Survey, key: str, runs: Sequence[AssertionRun], at_ms: int, *, feeding: Iterable[str] | None = None
) -> Score:
    """The score of class ``key`` of ``s`` (under its key's URN) from the runs of its assertions; ``feeding``, its
    field paths that feed a model (default: the class's, as ``s`` found them). A class's score does not depend on
    what else ``s`` surveyed: one survey of many datasets answers for each."""
    cls = s.classes[key]
    paths = cls.feeding if feeding is None else feeding
    return reliability.dataset_score(
        key, feeding=paths, tested=cls.tested, runs=runs, at_ms=at_ms, schema_known=cls.has_schema
    )


def model_scores(
    s: Survey, models: Iterable[str], runs: Callable[[str], Sequence[AssertionRun]], at_ms: int
) -> list[Score]:
    """The model scores ``assess(survey(view, models=models), …, at_ms)`` gives, from the survey ``s`` of a superset
    of ``models`` over the same view (one survey for many sets of models, as the score publisher asks). ``runs``:
    class key → the runs of every assertion of the class, asked only for the classes upstream of ``models``.

    Exact because everything a model's score reads is the same in both surveys but a class's ``feeding``: the
    survey of fewer models also names fewer columns that only lineage knows (not in a schema), so a class feeds
    its schema's feeding paths (:attr:`Survey.declared_feeding`) plus those of these models' own upstream columns.
    """
    targets = sorted(set(models))
    keys, feeding = _feeding_of(s, [s.upstream[m] for m in targets])
    by_class = {key: class_score(s, key, runs(key), at_ms, feeding=feeding(key)) for key in sorted(keys)}
    return [_model_score(s, m, by_class) for m in targets]


def upstream_classes(s: Survey, models: Iterable[str]) -> list[str]:
    """The classes of ``s`` upstream of ``models`` (sorted): those whose runs :func:`model_scores` asks for them."""
    return sorted(_feeding_of(s, [s.upstream[m] for m in set(models)])[0])


def dataset_scores_of(
    s: Survey,
    ups: Mapping[str, ModelUpstream],
    runs: Callable[[str], Sequence[AssertionRun]],
    at_ms: int,
) -> dict[str, list[Score]]:
    """Per model version of ``ups`` (version → its upstream), the scores of its upstream datasets (by URN) that
    ``assess(survey(view, models=[version], datasets=those), …, at_ms)`` gives, from a survey ``s`` over the same
    view that :func:`covers` each of them (one survey for the retrain gate's check 9 of many versions; a class with
    the same feeding paths for two versions is scored once); exact for the reason :func:`model_scores` is. ``runs``
    as there."""
    scored: dict[tuple[str, frozenset[str]], Score] = {}
    out: dict[str, list[Score]] = {}
    for version, up in ups.items():
        _, feeding = _feeding_of(s, [up])
        found = out[version] = []
        for d in sorted(up.datasets):
            key = s.class_of[d]
            paths = feeding(key)
            score = scored.get((key, paths))
            if score is None:
                score = scored[key, paths] = class_score(s, key, runs(key), at_ms, feeding=paths)
            found.append(Score(d, score.score, score.components))
    return out


def covers(s: Survey, up: ModelUpstream) -> bool:
    """Whether ``s`` found everything the scores of ``up``'s upstream datasets read: the class of each of them, and
    what each of its upstream columns feeds (true of a survey of ``up.model``, and of one of other versions that
    read the same columns)."""
    return all(d in s.class_of for d in up.datasets) and all(c in s.models and c in s.features for c in up.columns)


def _feeding_of(s: Survey, ups: Iterable[ModelUpstream]) -> tuple[set[str], Callable[[str], frozenset[str]]]:
    """The classes upstream of the versions ``ups`` (their upstreams) in ``s``, and each class's field paths feeding a
    model as the survey of those versions alone finds them: its schemas' feeding paths plus those of these versions'
    own upstream columns."""
    extra: dict[str, set[str]] = {}
    keys: set[str] = set()
    for up in ups:
        for c in up.columns:
            key = s.class_of[index_parent(c)]
            keys.add(key)
            if s.models[c] or s.features[c]:
                extra.setdefault(key, set()).add(index_path(c))
        keys.update(s.class_of[d] for d in up.table_datasets)
    return keys, lambda key: s.declared_feeding[key] | extra.get(key, set())


def _model_score(s: Survey, model: str, by_class: Mapping[str, Score]) -> Score:
    up = s.upstream[model]
    weights: dict[str, int] = {}
    for cols in up.feature_columns.values():
        for key in sorted({s.class_of[index_parent(c)] for c in cols if index_parent(c) in s.class_of}):
            weights[key] = weights.get(key, 0) + 1
    # A table-precision input weighs as every feature would, and so does each class feeding it only by lineage.
    tables: set[str] = set()
    for d in up.table_datasets:
        table_key = s.class_of.get(d)
        if table_key is not None:
            weights[table_key] = weights.get(table_key, 0) + max(1, len(up.features))
            tables.add(table_key)
    feeding = {s.class_of[d] for d in {index_parent(c) for c in up.table_columns} if d in s.class_of}
    for key in sorted(feeding - tables):
        weights[key] = weights.get(key, 0) + max(1, len(up.features))
    known = {k: (score, n) for k, n in weights.items() if (score := by_class[k].score) is not None}
    return reliability.model_score(model, known)
