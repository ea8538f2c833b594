#!/usr/bin/env bash
# MCP Inspector CLI, pinned, into a project-local folder (gitignored) for
# tests/server/test_inspector.py, which drives `cartograph serve` with `--cli`.
set -euo pipefail

VERSION="2.12.0"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DEST="$ROOT/.tools/inspector"
MARKER="$DEST/node_modules/@modelcontextprotocol/inspector/package.json"

if [ -f "$MARKER" ] && grep -q "\"version\": \"$VERSION\"" "$MARKER"; then
  exit 0
fi
mkdir -p "$DEST"
npm install --prefix "$DEST" --no-audit --no-fund --loglevel=error \
  "@modelcontextprotocol/inspector@$VERSION" >/dev/null
echo "40-inspector: installed @modelcontextprotocol/inspector@$VERSION into .tools/inspector"
