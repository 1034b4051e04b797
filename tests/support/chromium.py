"""How the browser tests and ``bench/web.py`` launch Debian's chromium (headless, no sandbox, nothing fetched from the
network on its own)."""

from __future__ import annotations

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
