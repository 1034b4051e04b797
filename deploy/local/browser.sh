#!/usr/bin/env bash
# Makes sure Debian's chromium is installed (apt-get when missing) and prints its path: the browser the Mission
# Control tests (tests/browser/) drive through Playwright for Python. Playwright's own browser download does not
# work on these machines, so the tests launch this executable instead (PAREIS_TEST_CHROMIUM overrides the path).
# Usage: deploy/local/browser.sh    (idempotent; exit 1 when chromium can't be installed)
set -euo pipefail
# shellcheck source=deploy/local/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

LOG="$LOG_DIR/browser.log"
mkdir -p "$LOG_DIR"
CHROMIUM="${PAREIS_TEST_CHROMIUM:-/usr/bin/chromium}"

if [[ ! -x "$CHROMIUM" ]]; then
  say "browser: $CHROMIUM not found; installing Debian's chromium" >&2
  apt_install chromium fonts-liberation >>"$LOG" 2>&1 || die_with_log browser "apt-get install chromium failed"
  [[ -x "$CHROMIUM" ]] || die_with_log browser "$CHROMIUM still missing after installing chromium"
fi
echo "$CHROMIUM"
