#!/usr/bin/env bash
# Installs the helm CLI into .stack/bin (idempotent) and prints its path.
# Built from source through the Go module proxy: the only way to get helm here (no binary downloads).
set -euo pipefail
HELM_VERSION="${HELM_VERSION:-v3.22.0}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BIN="$ROOT/.stack/bin"
HELM="$BIN/helm"
if [[ -x "$HELM" ]] && "$HELM" version --short 2>/dev/null | grep -q "^${HELM_VERSION}"; then
  echo "$HELM"
  exit 0
fi
command -v go >/dev/null || { echo "helm.sh: needs the go toolchain" >&2; exit 1; }
mkdir -p "$BIN"
# Stamp the version the way helm's Makefile does, so `helm version` reports it.
LDFLAGS="-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}"
GOBIN="$BIN" GOFLAGS="${GOFLAGS:-} -mod=mod" go install -ldflags "$LDFLAGS" "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}" >&2
echo "$HELM"
