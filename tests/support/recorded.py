"""The demo recording (``deploy/demo/recorded/``) opened once per test session, for the read surfaces' tests.

Loading the eleven steps takes seconds; the answers never mutate their sources, so every test module may share
one in-memory :class:`~pareis.answers.sources.Sources`.
"""

from __future__ import annotations

import functools
from pathlib import Path

from pareis.answers.sources import Sources

RECORDED = Path(__file__).resolve().parents[2] / "deploy" / "demo" / "recorded"
RAW = "urn:li:dataset:(urn:li:dataPlatform:postgres,retail.raw.transactions,PROD)"


def mlflow(kind: str, name: str) -> str:
    """``mlflow("mlModel", "churn_3")`` → the recording's URN of that model version (or group)."""
    return f"urn:li:{kind}:(urn:li:dataPlatform:mlflow,{name},PROD)"


@functools.cache
def recorded_sources() -> Sources:
    from pareis.compose.sources import open_sources

    return open_sources(metadata=[RECORDED])
