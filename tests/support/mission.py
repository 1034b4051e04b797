"""Mission Control over the recorded demo: a demo session advanced step by step, whose in-memory stores the web app
reads, guarded by one lock so a test can write (run the next step) while the server reads."""

from __future__ import annotations

import threading
from pathlib import Path

from pareis.answers.sources import Sources
from pareis.config import load_settings
from pareis.demo.session import DemoSession, Step, steps_of

ROOT = Path(__file__).resolve().parents[2]
RECORDED = sorted((ROOT / "deploy" / "demo" / "recorded").glob("[0-9][0-9]-*.json"))
INCIDENT_STEP = "09-d5-tests-fail"  # the not_null test on raw.transactions.unit_price fails: the incident opens
REPAIR_STEP = "10-d6-repair-tests-pass"  # the tests pass again: the incident resolves
GROUPS = (
    "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,churn,PROD)",
    "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,ltv,PROD)",
)
CONTAMINATED = (
    "urn:li:mlModel:(urn:li:dataPlatform:mlflow,churn_3,PROD)",
    "urn:li:mlModel:(urn:li:dataPlatform:mlflow,ltv_3,PROD)",
)


class DemoState:
    """The recorded demo's roles over in-memory stores, run up to (and including) a named step."""

    def __init__(self, through: str) -> None:
        self.session = DemoSession(load_settings())
        self.steps = steps_of(RECORDED)
        self.lock = threading.RLock()
        self.done: list[Step] = []
        self.advance(through)

    @property
    def sources(self) -> Sources:
        return self.session.sources

    def clock(self) -> int:
        """The demo's "now": the last step run."""
        return self.done[-1].at_ms if self.done else 0

    def advance(self, through: str) -> None:
        """Run every step after the last one run, through ``through``, holding the lock."""
        names = [s.name for s in self.steps]
        stop = names.index(through)
        with self.lock:
            for step in self.steps[len(self.done) : stop + 1]:
                self.session.run(step)
                self.done.append(step)
