"""How the browser tests and ``bench/web.py`` launch Debian's chromium (headless, no sandbox, nothing fetched from the
network on its own), the sizes the tests open pages at, and axe-core (vendored in ``tests/browser/vendor/`` by
``deploy/web/vendor.sh``: the tests need no npm) to check them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page

AXE = Path(__file__).resolve().parents[1] / "browser" / "vendor" / "axe.min.js"
SIZES = {"desktop": (1440, 900), "phone": (390, 844)}
"""The two sizes an on-call engineer reads Mission Control at: a laptop, and a phone."""

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@dataclass
class Screen:
    """A page at one size, and the console errors it reported; ``allow(pattern)`` declares the ones a test expects
    (a 404 page's own status, a stream the test broke)."""

    page: Page
    name: str
    width: int
    height: int
    errors: list[str] = field(default_factory=list)
    allowed: list[re.Pattern[str]] = field(default_factory=list)

    def allow(self, pattern: str) -> None:
        self.allowed.append(re.compile(pattern))

    def unexpected(self) -> list[str]:
        return [e for e in self.errors if not any(p.search(e) for p in self.allowed)]


def open_screen(browser: Browser, name: str) -> tuple[BrowserContext, Screen]:
    width, height = SIZES[name]
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    screen = Screen(page, name, width, height)
    page.on("console", lambda m: screen.errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: screen.errors.append(f"page error: {e}"))
    return context, screen


def axe_violations(page: Page) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations on the page as it is now (WCAG 2.0–2.2 A and AA rules and axe's
    best practices), each as ``{id, impact, help, nodes: [target…]}``."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    found: list[dict[str, Any]] = page.evaluate(
        """async () => {
          const r = await axe.run(document, {resultTypes: ['violations']});
          return r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
            .map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => n.target.join(' '))}));
        }"""
    )
    return found
