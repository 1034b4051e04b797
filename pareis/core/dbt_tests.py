"""dbt tests to paste for an untested column (DESIGN §2.5), chosen from what the index knows of the column.

Rules, every matching one applies (a primary key that is also a foreign key gets all three tests):

* primary key (``schemaMetadata.primaryKeys``) → ``not_null`` and ``unique``;
* foreign key (``schemaMetadata.foreignKeys``) → ``relationships`` to the referenced dbt model or source and field;
* string with a profile of at most :data:`MAX_ACCEPTED_VALUES` distinct values → ``accepted_values`` with the
  observed values;
* number with a profiled min and/or max → ``dbt_utils.accepted_range`` with those bounds (inclusive);
* none of the above → ``not_null``.

The facts of a column are those of its whole sibling class (the warehouse table carries keys and profiles, the
dbt node is where tests are written). Snippets are ``schema.yml`` documents under ``models:``, ``seeds:``,
``snapshots:`` or ``sources:`` as the column's dbt node requires, in dbt ≥ 1.10's form (``data_tests:`` with the
test's ``arguments:``) or, with ``legacy``, the older one (``tests:`` with the arguments inline), which every dbt
since 1.0 reads. YAML is written here (standard library only): names that are identifiers are plain, every other
string is a JSON string, which YAML reads as a double-quoted scalar.

A table dbt does not know yet is declared as a source named after its relation, which the dataset's URN gives: the
name part of ``urn:li:dataset:(platform,name,env)`` is a path (``dir/…/file``, as object stores and spreadsheets
name datasets: the last segment is the relation, the folder its schema) or a dotted ``[database.]schema.table``;
dots inside brackets or quotes belong to a name (``[business_report.xlsx]Business Report`` is one relation). dbt
refuses resource names with spaces (its test names are built from them), so a schema or table whose name is not an
identifier gets a dbt name made of its letters, digits and underscores, and the real name as the source's
``schema`` or the table's ``identifier``: the test still names the real relation. A column whose name is neither an
identifier nor a dotted path of identifiers (a nested field) is marked ``quote: true``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pareis.core.fieldpath import key_parts, parent_of, path_of

MAX_ACCEPTED_VALUES = 20
NUMERIC_TYPES = frozenset({"number"})
STRING_TYPES = frozenset({"string", "enum"})
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?\Z")
_NESTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_NOT_NAME = re.compile(r"[^A-Za-z0-9_]+")
_CLOSING = {"[": "]", '"': '"', "`": "`"}


@dataclass(frozen=True)
class ColumnFacts:
    """What the index knows of a column (merged over its sibling class)."""

    column: str
    type: str | None = None
    primary_key: bool = False
    foreign: tuple[str, ...] = ()
    """Foreign column URNs this column references."""
    minimum: str | None = None
    maximum: str | None = None
    values: tuple[str, ...] | None = None
    """Distinct values observed by the latest profile, when it lists them."""


@dataclass(frozen=True)
class DbtNode:
    """Where a column's tests go: ``kind`` is the ``schema.yml`` key, ``name`` the model/seed/snapshot or table
    name, ``source`` the source name for a source table (dbt names, as ``ref``/``source`` take them). ``schema`` and
    ``identifier``: the source's schema and the table's relation name where they differ from its dbt name."""

    kind: str
    name: str
    source: str | None = None
    schema: str | None = None
    identifier: str | None = None

    def ref(self) -> str:
        """How another test refers to it: ``ref('name')`` or ``source('source', 'table')``."""
        if self.kind == "sources":
            return f"source('{self.source}', '{self.name}')"
        return f"ref('{self.name}')"


@dataclass(frozen=True)
class DbtTest:
    """One generic test: its name and its arguments, in order."""

    name: str
    arguments: tuple[tuple[str, Any], ...] = field(default_factory=tuple)


def dbt_node(dataset: str, unique_id: str | None) -> DbtNode:
    """The dbt node of ``dataset``: from its ``dbt_unique_id`` (``model.pkg.name``, ``source.pkg.src.table``,
    ``seed.…``, ``snapshot.…``) when known, else a source named after the relation its name gives (a warehouse
    table that dbt does not know yet is declared as a source; see the module docstring)."""
    if unique_id:
        parts = unique_id.split(".")
        kind = parts[0]
        if kind == "source" and len(parts) >= 4:
            return DbtNode("sources", parts[-1], ".".join(parts[2:-1]))
        if kind in ("model", "seed", "snapshot") and len(parts) >= 3:
            return DbtNode(kind + "s", parts[-1])
    schema, table = relation_of(dataset)
    source, name = _dbt_name(schema), _dbt_name(table)
    return DbtNode("sources", name, source, None if source == schema else schema, None if name == table else table)


def relation_of(dataset: str) -> tuple[str, str]:
    """(schema, table) of the relation ``dataset`` names, split on the structure of its name, never inside a name:
    the folder and last segment of a path, else the last two parts of a dotted name (``default`` when it has one
    part only)."""
    parts = key_parts(dataset)
    name = parts[1] if len(parts) == 3 else parts[-1]
    if "/" in name:
        folder, _, table = name.rstrip("/").rpartition("/")
        return (folder or "default", table)
    dotted = _dotted_parts(name)
    return (dotted[-2] if len(dotted) >= 2 else "default", dotted[-1])


def _dotted_parts(name: str) -> list[str]:
    """``name`` split on the dots outside ``[…]``, ``"…"`` and `` `…` ``."""
    parts: list[str] = []
    start, closing = 0, ""
    for i, c in enumerate(name):
        if closing:
            closing = "" if c == closing else closing
        elif c in _CLOSING:
            closing = _CLOSING[c]
        elif c == ".":
            parts.append(name[start:i])
            start = i + 1
    parts.append(name[start:])
    return parts


def _dbt_name(name: str) -> str:
    """``name`` when dbt takes it as a resource name (an identifier), else its letters, digits and underscores."""
    if _PLAIN.match(name):
        return name
    return _NOT_NAME.sub("_", name).strip("_") or "unnamed"


def _number(text: str) -> int | float | None:
    if not _NUMBER.match(text.strip()):
        return None
    value = float(text)
    return int(value) if value.is_integer() and "." not in text and "e" not in text.lower() else value


def choose(facts: ColumnFacts, nodes: Mapping[str, DbtNode]) -> list[DbtTest]:
    """The tests for a column (see the module docstring); ``nodes`` maps datasets to their dbt node, for the
    target of a ``relationships`` test (a dataset absent from it is referred to as :func:`dbt_node` guesses)."""
    tests: list[DbtTest] = []
    if facts.primary_key:
        tests += [DbtTest("not_null"), DbtTest("unique")]
    for target in sorted(set(facts.foreign)):
        dataset = parent_of(target)
        node = nodes.get(dataset) or dbt_node(dataset, None)
        tests.append(DbtTest("relationships", (("to", node.ref()), ("field", path_of(target)))))
    if facts.type in STRING_TYPES and facts.values is not None and 0 < len(facts.values) <= MAX_ACCEPTED_VALUES:
        tests.append(DbtTest("accepted_values", (("values", sorted(facts.values)),)))
    if facts.type in NUMERIC_TYPES:
        bounds: list[tuple[str, Any]] = []
        for key, text in (("min_value", facts.minimum), ("max_value", facts.maximum)):
            value = None if text is None else _number(text)
            if value is not None:
                bounds.append((key, value))
        if bounds:
            tests.append(DbtTest("dbt_utils.accepted_range", (*bounds, ("inclusive", True))))
    return tests or [DbtTest("not_null")]


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_scalar(v) for v in value) + "]"
    text = str(value)
    return (
        text
        if _PLAIN.match(text) and text not in ("true", "false", "null", "yes", "no", "on", "off")
        else (json.dumps(text, ensure_ascii=False))
    )


def _test_lines(test: DbtTest, indent: str, legacy: bool) -> list[str]:
    if not test.arguments:
        return [f"{indent}- {_scalar(test.name)}"]
    lines = [f"{indent}- {_scalar(test.name)}:"]
    pad = indent + "    "
    if not legacy:
        lines.append(f"{pad}arguments:")
        pad += "  "
    lines += [f"{pad}{key}: {_scalar(value)}" for key, value in test.arguments]
    return lines


Entry = tuple[DbtNode, str, Sequence[DbtTest]]
"""(node, column name, tests)."""


def schema_yml(entries: Iterable[Entry], *, legacy: bool = False) -> str:
    """One ``schema.yml`` document with every entry's tests, merged by node and column (nodes sorted by kind,
    source and name; columns in first-seen order; a test given twice for a column is written once)."""
    nodes: dict[DbtNode, dict[str, list[DbtTest]]] = {}
    for node, column, tests in entries:
        listed = nodes.setdefault(node, {}).setdefault(column, [])
        listed.extend(t for t in tests if t not in listed)
    key = "tests" if legacy else "data_tests"
    lines = ["version: 2"]
    for kind in ("models", "seeds", "snapshots", "sources"):
        of_kind = sorted((n for n in nodes if n.kind == kind), key=lambda n: (n.source or "", n.name))
        if not of_kind:
            continue
        lines.append(f"{kind}:")
        if kind == "sources":
            for source, schema in sorted({(n.source or "", n.schema or "") for n in of_kind}):
                lines += [f"  - name: {_scalar(source)}"]
                lines += [f"    schema: {_scalar(schema)}"] if schema else []
                lines += ["    tables:"]
                for n in (n for n in of_kind if (n.source or "", n.schema or "") == (source, schema)):
                    lines += [f"      - name: {_scalar(n.name)}"]
                    lines += [f"        identifier: {_scalar(n.identifier)}"] if n.identifier else []
                    lines += _columns(nodes[n], "        ", key, legacy)
        else:
            for n in of_kind:
                lines += [f"  - name: {_scalar(n.name)}"]
                lines += _columns(nodes[n], "    ", key, legacy)
    return "\n".join(lines) + "\n"


def _columns(columns: Mapping[str, list[DbtTest]], indent: str, key: str, legacy: bool) -> list[str]:
    lines = [f"{indent}columns:"]
    for name, tests in columns.items():
        lines += [f"{indent}  - name: {_scalar(name)}"]
        lines += [] if _NESTED.match(name) else [f"{indent}    quote: true"]
        lines += [f"{indent}    {key}:"]
        for test in tests:
            lines += _test_lines(test, f"{indent}      ", legacy)
    return lines
