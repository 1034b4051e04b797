"""Canonical column URNs (pareis.core.fieldpath) agree with DataHub's own builders and helpers."""

from __future__ import annotations

import pytest
from datahub.emitter.mce_builder import make_dataset_urn, make_schema_field_urn
from datahub.utilities.urns.field_paths import get_simple_field_path_from_v2_field_path
from hypothesis import given
from hypothesis import strategies as st

from pareis.core.fieldpath import (
    canonical_column,
    column_urn,
    feature_name,
    key_parts,
    normal_field_path,
    split_column,
)

DS = make_dataset_urn("hive", "db.orders(v2)")
# Field names as producers write them: anything but '%' (DataHub never encodes it) and the empty name.
names = st.text(st.characters(blacklist_characters="%", blacklist_categories=("Cs",)), min_size=1).filter(
    lambda s: normal_field_path(s) != ""
)


@given(names)
def test_canonical_form_is_datahubs_builder_output(name: str) -> None:
    simple = get_simple_field_path_from_v2_field_path(name)
    built = make_schema_field_urn(DS, name)
    assert canonical_column(built) == make_schema_field_urn(DS, simple)
    assert column_urn(DS, name) == make_schema_field_urn(DS, simple)
    assert split_column(built) == (DS, simple)


@given(names)
def test_unencoded_and_encoded_spellings_are_one_column(name: str) -> None:
    raw = f"urn:li:schemaField:({DS},{name})"
    assert canonical_column(raw) == canonical_column(make_schema_field_urn(DS, name))


def test_v2_paths_reduce_to_simple_ones() -> None:
    v2 = "[version=2.0].[key=True].[type=Key].[type=string].id"
    assert split_column(f"urn:li:schemaField:({DS},{v2})") == (DS, "id")
    assert column_urn(DS, "[version=2.0].[type=R].[type=map].m.[type=long].v") == make_schema_field_urn(DS, "m.v")


def test_percent_sequences_decode_in_any_case() -> None:
    assert split_column(f"urn:li:schemaField:({DS},a%2cb%28c%29%e2%90%9f)") == (DS, "a,b(c)␟")
    assert split_column(f"urn:li:schemaField:({DS},100%25)") == (DS, "100%25")


@pytest.mark.parametrize(
    "bad",
    [
        DS,
        "urn:li:schemaField:(notaurn,x)",
        f"urn:li:schemaField:({DS})",
        f"urn:li:schemaField:({DS},[version=2.0].[type=R])",
        "urn:li:schemaField:(urn:li:dataset:(unbalanced,x)",
    ],
)
def test_malformed_column_urns_are_value_errors(bad: str) -> None:
    with pytest.raises(ValueError):
        canonical_column(bad)


def test_feature_names_and_key_parts() -> None:
    assert feature_name("urn:li:mlFeature:(driver_stats,conv_rate)") == "conv_rate"
    assert feature_name("urn:li:mlFeature:(ns,a%2Cb)") == "a,b"
    assert key_parts(make_schema_field_urn(DS, "x")) == (DS, "x")
    assert key_parts("urn:li:corpuser:jdoe") == ("jdoe",)
