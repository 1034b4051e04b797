#!/usr/bin/env bash
# Vendors Mission Control's JavaScript into pareis/web/static/vendor/ from the npm registry: htmx, its SSE extension
# and cytoscape (the blast-radius graph). Run by hand when bumping a version; the output is committed, so neither a
# build nor a running server needs the network (no CDN at run time). Each package's licence is copied beside it and
# VERSIONS records what was taken, with the sha256 of each file.
# Test-only: axe-core (the accessibility checker the browser tests inject into every page) goes to
# tests/browser/vendor/ the same way, so the tests need no npm either; it never ships with the package.
set -euo pipefail

HTMX=2.0.11        # htmx 2 (the sse extension 2.x is built for htmx 2; htmx 4 moved SSE into the core)
HTMX_SSE=2.2.4
CYTOSCAPE=3.35.0
AXE_CORE=4.14.1    # test-only

root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$root/pareis/web/static/vendor"
tests_out="$root/tests/browser/vendor"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

fetch() {  # fetch NAME VERSION -> unpacked into $work/NAME
  local name="$1" version="$2"
  (cd "$work" && npm pack --silent "$name@$version" >/dev/null)
  mkdir -p "$work/$name"
  tar -xzf "$work/${name//\//-}-$version.tgz" -C "$work/$name" --strip-components=1
}

fetch htmx.org "$HTMX"
fetch htmx-ext-sse "$HTMX_SSE"
fetch cytoscape "$CYTOSCAPE"
fetch axe-core "$AXE_CORE"

rm -rf "$out"
mkdir -p "$out"
cp "$work/htmx.org/dist/htmx.min.js" "$out/htmx.min.js"
cp "$work/htmx.org/LICENSE" "$out/htmx.LICENSE"
cp "$work/htmx-ext-sse/dist/sse.min.js" "$out/htmx-ext-sse.min.js"
cp "$work/htmx-ext-sse/LICENSE" "$out/htmx-ext-sse.LICENSE"
cp "$work/cytoscape/dist/cytoscape.min.js" "$out/cytoscape.min.js"
cp "$work/cytoscape/LICENSE" "$out/cytoscape.LICENSE"

{
  echo "# npm packages vendored by deploy/web/vendor.sh (name version, then sha256 of each file)"
  echo "htmx.org $HTMX"
  echo "htmx-ext-sse $HTMX_SSE"
  echo "cytoscape $CYTOSCAPE"
  (cd "$out" && sha256sum ./*.js ./*.LICENSE | sed 's#  \./#  #')
} >"$out/VERSIONS"

rm -rf "$tests_out"
mkdir -p "$tests_out"
cp "$work/axe-core/axe.min.js" "$tests_out/axe.min.js"
cp "$work/axe-core/LICENSE" "$tests_out/axe.LICENSE"
{
  echo "# npm packages vendored by deploy/web/vendor.sh for the browser tests only (name version, then sha256)"
  echo "axe-core $AXE_CORE"
  (cd "$tests_out" && sha256sum ./*.js ./*.LICENSE | sed 's#  \./#  #')
} >"$tests_out/VERSIONS"
echo "vendored into $out and $tests_out:"
ls -l "$out" "$tests_out"
