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
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pareis.core.fieldpath import parent_of, path_of

MAX_ACCEPTED_VALUES = 20
NUMERIC_TYPES = frozenset({"number"})
STRING_TYPES = frozenset({"string", "enum"})
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?\Z")


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
    name, ``source`` the source name for a source table."""

    kind: str
    name: str
    source: str | None = None

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
    ``seed.…``, ``snapshot.…``) when known, else a source named after the schema part of its name (a warehouse
    table that dbt does not know yet is declared as a source)."""
    if unique_id:
        parts = unique_id.split(".")
        kind = parts[0]
        if kind == "source" and len(parts) >= 4:
            return DbtNode("sources", parts[-1], ".".join(parts[2:-1]))
        if kind in ("model", "seed", "snapshot") and len(parts) >= 3:
            return DbtNode(kind + "s", parts[-1])
    name = _dataset_name(dataset).split(".")
    table = name[-1]
    schema = name[-2] if len(name) >= 2 else "default"
    return DbtNode("sources", table, schema)


def _dataset_name(dataset: str) -> str:
    """The name part of ``urn:li:dataset:(platform,name,env)``."""
    inner = dataset[dataset.find("(") + 1 : dataset.rfind(")")]
    parts = inner.split(",")
    return parts[1] if len(parts) >= 3 else inner


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
            for source in sorted({n.source or "" for n in of_kind}):
                lines += [f"  - name: {_scalar(source)}", "    tables:"]
                for n in (n for n in of_kind if n.source == source):
                    lines += [f"      - name: {_scalar(n.name)}"]
                    lines += _columns(nodes[n], "        ", key, legacy)
        else:
            for n in of_kind:
                lines += [f"  - name: {_scalar(n.name)}"]
                lines += _columns(nodes[n], "    ", key, legacy)
    return "\n".join(lines) + "\n"


def _columns(columns: Mapping[str, list[DbtTest]], indent: str, key: str, legacy: bool) -> list[str]:
    lines = [f"{indent}columns:"]
    for name, tests in columns.items():
        lines += [f"{indent}  - name: {_scalar(name)}", f"{indent}    {key}:"]
        for test in tests:
            lines += _test_lines(test, f"{indent}      ", legacy)
    return lines
