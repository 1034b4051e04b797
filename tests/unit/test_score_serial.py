"""The reliability-score patches built in serial form (:mod:`pareis.datahub.writes.score_serial`) are, byte for byte,
the
ones acryl-datahub's patch builder gives (:func:`pareis.roles.score_writes.score_mcps`), and the incidents role writes
them on the Kafka path."""

from __future__ import annotations

import pytest

from pareis.config import DatahubSettings
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.datahub.writes.score_serial import score_patch
from pareis.datahub.writes.writer import KafkaWriter
from pareis.roles.score_writes import ScoreWrite, score_mcps
from tests.support.writer_scenario import SETTINGS

WRITER = KafkaWriter.from_source(VendoredSchemaSource(), "MetadataChangeProposal_v1")
WRITES = [
    ScoreWrite("urn:li:mlModel:(urn:li:dataPlatform:mlflow,churn,PROD)", 87.5, 1_700_000_000_000, "urn:li:dataset:x"),
    ScoreWrite("urn:li:dataset:(urn:li:dataPlatform:s3,lake/raw~2/orders,PROD)", 0.0, 1, "c"),
    ScoreWrite("urn:li:dataset:(urn:li:dataPlatform:hive,café ✓,PROD)", 100, 2, "c"),  # an int, as a caller may pass
    ScoreWrite('urn:li:mlModel:(urn:li:dataPlatform:sagemaker,a"b\\c,PROD)', 100 / 3, 3, "c"),
]
SETTINGS_CASES = {"plain": SETTINGS, "defaults": DatahubSettings()}


@pytest.mark.parametrize("settings", list(SETTINGS_CASES.values()), ids=list(SETTINGS_CASES))
def test_serial_score_patches_encode_to_the_bytes_of_acryls(settings: DatahubSettings) -> None:
    reference = WRITER.write(score_mcps(WRITES, settings))
    serial = [score_patch(w.urn, w.score, w.at_ms, w.effect_id, settings) for w in WRITES]
    assert len(reference) == len(WRITES)
    assert WRITER.write_serial(serial) == reference
