"""Browser fixtures: Debian's chromium driven by Playwright for Python, Mission Control served from a thread.

Chromium is the system one (``deploy/local/browser.sh`` installs it; ``make test`` runs that first), launched by
path: Playwright's own browser download can't work on these machines. A missing browser FAILS the tests, it never
skips them. Every page a test opens records console errors and uncaught exceptions, and the test fails when there is
any it did not declare (:meth:`tests.support.chromium.Screen.allow`). Pages are opened at the two sizes an on-call
engineer reads them at: a laptop (1440×900) and a phone (390×844). Screenshots go to ``$PAREIS_TEST_ARTIFACTS`` (default
``.stack/artifacts/browser``); with ``PAREIS_TEST_UPDATE_SCREENSHOTS=1`` they are copied to ``docs/screenshots/``
too (the README's pictures).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.chromium import CHROMIUM_FLAGS, SIZES, Screen, open_screen

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, Playwright

ROOT = Path(__file__).resolve().parents[2]


def chromium_path() -> str:
    """The system chromium, or a test failure saying how to get it."""
    path = os.environ.get("PAREIS_TEST_CHROMIUM", "/usr/bin/chromium")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        pytest.fail(f"chromium not found at {path}: run deploy/local/browser.sh (make test does)", pytrace=False)
    return path


# Module scope, not session: Playwright's sync API runs an event loop in the main thread while it is open, and
# a later test (tests/unit) that calls asyncio.run() there would fail.
@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
    yield browser
    browser.close()


@pytest.fixture(params=sorted(SIZES))
def screen(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Screen]:
    """A fresh page at each size (``desktop``, ``phone``) that fails the test on an undeclared console error."""
    context, s = open_screen(browser, request.param)
    yield s
    context.close()
    assert s.unexpected() == [], "the browser reported errors"


@pytest.fixture
def desktop(browser: Browser) -> Iterator[Screen]:
    """:func:`screen` at the desktop size only."""
    context, s = open_screen(browser, "desktop")
    yield s
    context.close()
    assert s.unexpected() == [], "the browser reported errors"


@pytest.fixture
def page(desktop: Screen) -> Page:
    """:func:`desktop`'s page: a fresh 1440×900 page that fails the test on any console error."""
    return desktop.page


@pytest.fixture(scope="session")
def artifacts() -> Path:
    out = Path(os.environ.get("PAREIS_TEST_ARTIFACTS", ROOT / ".stack" / "artifacts" / "browser"))
    out.mkdir(parents=True, exist_ok=True)
    return out


@pytest.fixture
def screenshot(artifacts: Path) -> Callable[[Page, str], Path]:
    """``screenshot(page, name)``: a PNG of the first screen (what is read without scrolling: the test this page is
    made for), copied to docs/screenshots/ when updating; the whole page as ``NAME-full.png`` in the artifacts."""

    def take(page: Page, name: str) -> Path:
        path = artifacts / f"{name}.png"
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=str(path))
        page.screenshot(path=str(artifacts / f"{name}-full.png"), full_page=True)
        if os.environ.get("PAREIS_TEST_UPDATE_SCREENSHOTS") == "1":
            docs = ROOT / "docs" / "screenshots"
            docs.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, docs / path.name)
        return path

    return take
