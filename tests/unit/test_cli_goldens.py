"""``pareis blast`` / ``analyze`` on real DataHub metadata (issue 10 points 8 and 9): a whole dataset's blast radius,
the features linked only at table precision, folders of files, and URNs printed verbatim.

* Feast golden + overlay (see tests/unit/test_goldens_ml_answers.py): the request source ``vals_to_add`` has no
  schema, so failing as a whole it poisons its two features at table precision.
* Excel golden: the connector names a sheet ``…/[business_report.xlsx]Business Report``; rich would read
  ``[business_report.xlsx]`` as markup and drop it.
* A dataset named with ``:chart:`` (an emoji code to rich) and terminal control characters (ESC, a bidi override),
  written here: they must show as text, the control characters as their escapes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from tests.support.goldens import golden, overlay

REQUEST = "urn:li:dataset:(urn:li:dataPlatform:request,vals_to_add,PROD)"
EXCEL = (
    "urn:li:dataset:(urn:li:dataPlatform:excel,tests/integration/excel/data/[business_report.xlsx]Business Report,PROD)"
)
WEIRD = "urn:li:dataset:(urn:li:dataPlatform:postgres,shop.urn:li:chart:\x1b[31mred\u202e,PROD)"


def cli(*args: str) -> Any:
    from pareis import cli as entry

    return CliRunner().invoke(entry.app, list(args), env={"COLUMNS": "400"})


def test_blast_of_a_dataset_names_the_features_linked_only_at_table_precision() -> None:
    feast = ["--metadata", str(golden("feast__feast_repository_mces_golden"))]
    result = cli(
        "blast", *feast, "--metadata", str(overlay("feast_models_and_failing_sources")), "--dataset", REQUEST, "--json"
    )
    assert result.exit_code == 0, result.stderr
    blast = json.loads(result.stdout)["blast"]
    expected = [f"urn:li:mlFeature:(feature_store.transformed_conv_rate,conv_rate_plus_val{i})" for i in (1, 2)]
    assert blast["features"] == expected and blast["table_precision_features"] == expected
    assert {(m["urn"].split(",")[1], m["ratio"], m["severity"]) for m in blast["models"]} == {
        ("conv_model", 0.25, "HIGH"),
        ("plus_model", 0.5, "HIGH"),
    }


def test_a_folder_of_metadata_is_read_recursively_and_an_empty_one_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    shutil.copy(golden("feast__feast_repository_mces_golden"), tmp_path / "01-feast.JSON")
    shutil.copy(overlay("feast_models_and_failing_sources"), tmp_path / "sub" / "02-overlay.json")
    result = cli("blast", "--metadata", str(tmp_path), "--dataset", REQUEST, "--json")
    assert result.exit_code == 0, result.stderr
    assert len(json.loads(result.stdout)["blast"]["models"]) == 2
    (tmp_path / "empty").mkdir()
    result = cli("blast", "--metadata", str(tmp_path / "empty"), "--dataset", REQUEST)
    assert result.exit_code == 2 and "holds no .json file" in result.stderr and result.stderr.count("\n") == 1


def test_an_excel_urn_is_printed_verbatim() -> None:
    result = cli("blast", "--metadata", str(golden("excel__excel_file_test_golden")), "--dataset", EXCEL)
    assert result.exit_code == 0, result.stderr
    assert f"Blast radius of {EXCEL}" in result.stdout
    assert "[business_report.xlsx]Business Report,PROD),Q1 Sales)" in result.stdout  # a failing column


def weird_metadata(tmp_path: Path) -> Path:
    assertion = "urn:li:assertion:weird-rows"

    def mcp(entity_type: str, urn: str, aspect: str, value: Any) -> dict[str, Any]:
        return {
            "entityType": entity_type,
            "entityUrn": urn,
            "changeType": "UPSERT",
            "aspectName": aspect,
            "aspect": {"json": value},
        }

    def run(t: int, result: str) -> dict[str, Any]:
        event = {
            "timestampMillis": t,
            "assertionUrn": assertion,
            "asserteeUrn": WEIRD,
            "runId": str(t),
            "status": "COMPLETE",
            "result": {"type": result},
        }
        return mcp("assertion", assertion, "assertionRunEvent", event)

    items = [
        mcp(
            "dataset",
            WEIRD,
            "schemaMetadata",
            {
                "schemaName": "w",
                "platform": "urn:li:dataPlatform:postgres",
                "version": 0,
                "hash": "",
                "platformSchema": {"com.linkedin.schema.MySqlDDL": {"tableSchema": ""}},
                "fields": [
                    {
                        "fieldPath": "v",
                        "nativeDataType": "int",
                        "type": {"type": {"com.linkedin.schema.NumberType": {}}},
                    }
                ],
            },
        ),
        mcp(
            "assertion",
            assertion,
            "assertionInfo",
            {
                "type": "DATASET",
                "datasetAssertion": {
                    "dataset": WEIRD,
                    "scope": "DATASET_ROWS",
                    "operator": "_NATIVE_",
                    "aggregation": "_NATIVE_",
                },
            },
        ),
        run(1_700_000_000_000, "SUCCESS"),
        run(1_700_086_400_000, "FAILURE"),
    ]
    path = tmp_path / "weird.json"
    path.write_text(json.dumps(items))  # json.dumps writes the control characters as \\u escapes, as a file would
    return path


def test_emoji_codes_and_control_characters_in_urns_are_shown_not_interpreted(tmp_path: Path) -> None:
    path = weird_metadata(tmp_path)
    shown = "urn:li:dataset:(urn:li:dataPlatform:postgres,shop.urn:li:chart:\\x1b[31mred\\u202e,PROD)"
    for command in (["blast", "--dataset", WEIRD], ["analyze", "--dataset", WEIRD]):
        result = cli(command[0], "--metadata", str(path), *command[1:])
        assert result.exit_code == 0, result.stderr
        assert shown in result.stdout
        assert "\x1b" not in result.stdout and "\u202e" not in result.stdout and "📈" not in result.stdout
    result = cli("blast", "--metadata", str(path), "--dataset", WEIRD.replace("red", "blue"))
    assert result.exit_code == 2 and "unknown dataset" in result.stderr
    assert "\\x1b[31mblue" in result.stderr and "\x1b" not in result.stderr
