"""The data-quality dimension an assertion tests: the incident's class of failure (DESIGN §3).

One of :data:`DIMENSIONS`, read from what DataHub records of the assertion (its ``assertionInfo``), most specific
evidence first:

1. the assertion type: ``FRESHNESS`` → freshness, ``VOLUME`` → volume, ``DATA_SCHEMA`` → schema;
2. a dataset (or dbt custom) assertion's scope, aggregation and operator, as dbt's and Great Expectations'
   connectors set them:
   scope ``DATASET_SCHEMA`` or aggregation ``COLUMNS``/``COLUMN_COUNT`` → schema; aggregation ``ROW_COUNT`` → volume;
   ``UNIQUE_COUNT``/``UNIQUE_PROPORTION`` (and DataHub's spelling ``UNIQUE_PROPOTION``) → uniqueness;
   ``NULL_COUNT``/``NULL_PROPORTION`` or operators ``NOT_NULL``/``NULL`` → completeness; the comparison operators
   (``IN``, ``NOT_IN``, ``BETWEEN``, ``GREATER_THAN``, ``REGEX_MATCH``, …) → validity; a field assertion's metric
   likewise, and its value checks → validity;
3. the test's name: a dbt test (``datasetAssertion.nativeType``, ``customAssertion.type``, dbt's
   ``nativeParameters``), a Great Expectations expectation, an assertion description — the keyword that appears
   first wins, since dbt names a test after its macro and then its arguments (``not_null_orders_amount``,
   ``dbt_expectations_expect_column_values_to_be_in_set_…_is_not_null``);
4. ``other`` when nothing says.

Pure; the input is the aspect's JSON (Pegasus JSON, as on the change log).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

COMPLETENESS = "completeness"
UNIQUENESS = "uniqueness"
VALIDITY = "validity"
REFERENTIAL_INTEGRITY = "referential integrity"
FRESHNESS = "freshness"
VOLUME = "volume"
SCHEMA = "schema"
OTHER = "other"
DIMENSIONS = (COMPLETENESS, UNIQUENESS, VALIDITY, REFERENTIAL_INTEGRITY, FRESHNESS, VOLUME, SCHEMA, OTHER)

_BY_TYPE = {"FRESHNESS": FRESHNESS, "VOLUME": VOLUME, "DATA_SCHEMA": SCHEMA, "SCHEMA": SCHEMA}
_BY_AGGREGATION = {
    "ROW_COUNT": VOLUME,
    "COLUMNS": SCHEMA,
    "COLUMN_COUNT": SCHEMA,
    "UNIQUE_COUNT": UNIQUENESS,
    "UNIQUE_PROPORTION": UNIQUENESS,
    "UNIQUE_PROPOTION": UNIQUENESS,
    "NULL_COUNT": COMPLETENESS,
    "NULL_PROPORTION": COMPLETENESS,
}
_VALIDITY_OPERATORS = frozenset(
    {
        "IN",
        "NOT_IN",
        "BETWEEN",
        "LESS_THAN",
        "LESS_THAN_OR_EQUAL_TO",
        "GREATER_THAN",
        "GREATER_THAN_OR_EQUAL_TO",
        "EQUAL_TO",
        "NOT_EQUAL_TO",
        "CONTAIN",
        "START_WITH",
        "END_WITH",
        "REGEX_MATCH",
        "IS_TRUE",
        "IS_FALSE",
    }
)
_BY_OPERATOR = {"NOT_NULL": COMPLETENESS, "NULL": COMPLETENESS} | dict.fromkeys(_VALIDITY_OPERATORS, VALIDITY)
_BY_METRIC = {
    "NULL_COUNT": COMPLETENESS,
    "NULL_PERCENTAGE": COMPLETENESS,
    "UNIQUE_COUNT": UNIQUENESS,
    "UNIQUE_PERCENTAGE": UNIQUENESS,
    "EMPTY_COUNT": COMPLETENESS,
    "EMPTY_PERCENTAGE": COMPLETENESS,
}
_KEYWORDS: tuple[tuple[str, str], ...] = (
    ("not_null", COMPLETENESS),
    ("not_be_null", COMPLETENESS),
    ("to_be_null", COMPLETENESS),
    ("not null", COMPLETENESS),
    ("null", COMPLETENESS),
    ("unique", UNIQUENESS),
    ("distinct", UNIQUENESS),
    ("duplicate", UNIQUENESS),
    ("relationships", REFERENTIAL_INTEGRITY),
    ("referential", REFERENTIAL_INTEGRITY),
    ("foreign_key", REFERENTIAL_INTEGRITY),
    ("freshness", FRESHNESS),
    ("fresh", FRESHNESS),
    ("recent", FRESHNESS),
    ("stale", FRESHNESS),
    ("row_count", VOLUME),
    ("rowcount", VOLUME),
    ("row count", VOLUME),
    ("volume", VOLUME),
    ("column_to_exist", SCHEMA),
    ("columns_to_match", SCHEMA),
    ("column_count", SCHEMA),
    ("schema", SCHEMA),
    ("column_type", SCHEMA),
    ("accepted_values", VALIDITY),
    ("accepted_range", VALIDITY),
    ("in_set", VALIDITY),
    ("between", VALIDITY),
    ("regex", VALIDITY),
    ("match", VALIDITY),
    ("positive", VALIDITY),
    ("negative", VALIDITY),
    ("range", VALIDITY),
    ("format", VALIDITY),
    ("valid", VALIDITY),
    ("equal", VALIDITY),
    ("email", VALIDITY),
    ("length", VALIDITY),
)
_KEYWORD = re.compile("|".join(re.escape(k) for k, _ in _KEYWORDS))
_KEYWORD_DIMENSION = dict(_KEYWORDS)


def dimension(info: Mapping[str, Any]) -> str:
    """The dimension an ``assertionInfo`` value tests (see the module docstring); ``other`` when nothing says."""
    kind = info.get("type")
    if isinstance(kind, str) and kind in _BY_TYPE:
        return _BY_TYPE[kind]
    for key in (
        "datasetAssertion",
        "customAssertion",
        "fieldAssertion",
        "volumeAssertion",
        "freshnessAssertion",
        "schemaAssertion",
    ):
        sub = info.get(key)
        if isinstance(sub, Mapping):
            found = _structured(key, sub)
            if found is not None:
                return found
    return name_dimension(*_names(info)) or OTHER


def name_dimension(*names: str) -> str | None:
    """The dimension the first of ``names`` that says one says, by its earliest keyword; None when none does."""
    for name in names:
        hit = _KEYWORD.search(name.casefold())
        if hit is not None:
            return _KEYWORD_DIMENSION[hit.group(0)]
    return None


def _structured(key: str, sub: Mapping[str, Any]) -> str | None:
    if key == "volumeAssertion":
        return VOLUME
    if key == "freshnessAssertion":
        return FRESHNESS
    if key == "schemaAssertion":
        return SCHEMA
    if key == "fieldAssertion":
        metric = sub.get("fieldMetricAssertion")
        if isinstance(metric, Mapping) and metric.get("metric") in _BY_METRIC:
            return _BY_METRIC[str(metric["metric"])]
        values = sub.get("fieldValuesAssertion")
        if isinstance(values, Mapping):
            return _BY_OPERATOR.get(str(values.get("operator")), VALIDITY)
        return None
    if sub.get("scope") == "DATASET_SCHEMA":
        return SCHEMA
    aggregation = sub.get("aggregation")
    if isinstance(aggregation, str) and aggregation in _BY_AGGREGATION:
        return _BY_AGGREGATION[aggregation]
    operator = sub.get("operator")
    if isinstance(operator, str) and operator in _BY_OPERATOR:
        return _BY_OPERATOR[operator]
    return None


def _names(info: Mapping[str, Any]) -> list[str]:
    """The names and descriptions the assertion carries, most specific first."""
    out: list[str] = []
    for key in ("datasetAssertion", "customAssertion", "fieldAssertion", "sqlAssertion"):
        sub = info.get(key)
        if not isinstance(sub, Mapping):
            continue
        for name in ("nativeType", "type"):
            if isinstance(sub.get(name), str):
                out.append(sub[name])
        native = sub.get("nativeParameters")
        if isinstance(native, Mapping):
            out.extend(str(native[k]) for k in ("test_name", "name") if isinstance(native.get(k), str))
    props = info.get("customProperties")
    if isinstance(props, Mapping):
        out.extend(
            str(props[k]) for k in ("test_name", "expectation_type", "dbt_unique_id") if isinstance(props.get(k), str)
        )
    if isinstance(info.get("description"), str):
        out.append(info["description"])
    return out
