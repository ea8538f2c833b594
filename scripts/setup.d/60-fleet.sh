#!/usr/bin/env bash
# PostgreSQL and HAProxy from Debian's packages, for the fleet tests (tests/storage,
# tests/fleet) and benchmarks/fleet_load.py. The tests start their own throwaway
# PostgreSQL cluster and HAProxy on loopback ports: the packaged services are not used.
# Idempotent and quiet: nothing happens when both are installed already.
set -euo pipefail

have_postgres() { compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; }
have_haproxy() { command -v haproxy >/dev/null 2>&1; }

if have_postgres && have_haproxy; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "60-fleet: PostgreSQL and HAProxy are missing; as root run: apt-get install postgresql haproxy" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
# policy-rc.d may refuse to start the packaged services; the tests start their own.
apt-get install -y -qq --no-install-recommends postgresql haproxy >/dev/null 2>&1
echo "60-fleet: installed PostgreSQL and HAProxy from Debian's packages"
