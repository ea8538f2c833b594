#!/usr/bin/env bash
# Headless Chromium for the Rift HTML report's browser test (tests/rift/test_html.py).
# Debian's own `chromium` package: no browser download of its own. Idempotent and quiet.
set -euo pipefail

if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "50-chromium: apt-get not found; install chromium by hand for the Rift browser test" >&2
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null
echo "50-chromium: installed $(chromium --version 2>/dev/null || echo chromium)"
