#!/usr/bin/env bash
# Makes sure PYTHON can build the modules mypyc compiles at install (pyproject.toml [tool.pareis] compiled,
# setup.py): a C compiler (Debian's gcc, apt-get when missing) and the interpreter's C headers (Debian's
# python3-dev when the interpreter is Debian's own; any other interpreter must ship them, as python.org and pyenv
# builds do). `make install` runs it first, so a fresh machine gets what the build needs rather than a compiler
# error from deep inside setuptools.
# Usage: deploy/local/compiler.sh PYTHON    (idempotent; exit 1 with one line when it can't be provided)
set -euo pipefail
# shellcheck source=deploy/local/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if (($# != 1)); then
  warn "usage: $0 PYTHON"
  exit 2
fi
PYTHON="$1"
"$PYTHON" -c "" 2>/dev/null || {
  warn "ERROR: compiler: $PYTHON does not run as a Python interpreter"
  exit 2
}
LOG="$LOG_DIR/compiler.log"
mkdir -p "$LOG_DIR"

headers() {
  "$PYTHON" -c "import pathlib, sys, sysconfig; sys.exit(not pathlib.Path(sysconfig.get_paths()['include'], 'Python.h').is_file())"
}

if ! command -v cc >/dev/null && ! command -v gcc >/dev/null; then
  say "compiler: no C compiler found; installing Debian's gcc" >&2
  apt_install gcc libc6-dev >>"$LOG" 2>&1 || die_with_log compiler "apt-get install gcc failed (mypyc needs a C compiler)"
fi
if ! headers; then
  include="$("$PYTHON" -c "import sysconfig; print(sysconfig.get_paths()['include'])")"
  if [[ "$include" != /usr/include/* ]]; then
    warn "ERROR: compiler: $PYTHON has no C headers (Python.h under $include); use a build that ships them"
    exit 1
  fi
  say "compiler: $PYTHON has no C headers; installing Debian's python3-dev" >&2
  apt_install python3-dev >>"$LOG" 2>&1 || die_with_log compiler "apt-get install python3-dev failed"
  headers || die_with_log compiler "Python.h still missing under $include after installing python3-dev"
fi
