"""Counting the blast radius walks of analyses, for tests of what is walked and what is taken as given (kept by the
exposure index, by a walk cache, or read once for a batch). The analysis is compiled (``pareis/core/analysis.py``):
its own calls cannot be replaced, so the walks are counted where a caller asks for them, by the rule the analysis
walks by — each failing assertion whose radius it is not given is walked once, and a joint walk is one more."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import Any

import pytest

from pareis.core.runs import AssertionRun


class Walks:
    """The walks the analyses that ``module`` calls make (``count``), counted through whichever of
    ``walk_together``, ``shared_analysis``, ``shared_blasts``, ``analysis_inputs`` and ``incident_facts`` it holds
    (:mod:`pareis.core.analysis` itself for callers that name it, or a module that imported them)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, module: ModuleType) -> None:
        self.count = 0
        for name, wrap in (
            ("walk_together", self._together),
            ("shared_analysis", self._over_failing),
            ("shared_blasts", self._over_failing),
            ("analysis_inputs", self._over_failing),
            ("incident_facts", self._over_window),
        ):
            if hasattr(module, name):
                monkeypatch.setattr(module, name, wrap(getattr(module, name)))

    def _not_given(self, failing: Iterable[AssertionRun], known: Mapping[str, object] | None) -> None:
        self.count += len({r.assertion for r in failing if r.fails} - (known or {}).keys())

    def _together(self, real: Any) -> Any:
        def together(view: Any, failing: Any) -> Any:
            joint = real(view, failing)
            self.count += joint is not None
            return joint

        return together

    def _over_failing(self, real: Any) -> Any:
        def analysed(view: Any, timeline: Any, failing: Any, *args: Any, **kwargs: Any) -> Any:
            failing = list(failing)
            self._not_given(failing, kwargs.get("known"))
            return real(view, timeline, failing, *args, **kwargs)

        return analysed

    def _over_window(self, real: Any) -> Any:
        def analysed(view: Any, key: str, timeline: Any, window: Any, *args: Any, **kwargs: Any) -> Any:
            self._not_given(window.runs, kwargs.get("known"))
            return real(view, key, timeline, window, *args, **kwargs)

        return analysed
