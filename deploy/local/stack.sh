#!/usr/bin/env bash
# The local stack Pareis's tests and demo run against: Kafka (KRaft, 127.0.0.1:9092), Redis (127.0.0.1:6379), a
# Redis Cluster (3 primaries + 3 replicas, 127.0.0.1:7000-7005) and PostgreSQL (127.0.0.1:5432), all as plain
# processes (no Docker), state and logs under <repo>/.stack.
#
# Usage: deploy/local/stack.sh up|down [--purge]|status [kafka|redis|redis-cluster|postgres ...]   (no names = all)
#   up      start what isn't running, then wait (with a deadline) until each answers; on a running service
#           it only re-checks readiness. Idempotent.
#   down    stop what this stack started (by pid file); --purge also deletes its data and logs (the Kafka jar
#           cache is kept).
#   status  one line per service.
# Exit codes: 0 ok; 1 a service failed to start or stop (its log tail is printed); 2 usage; 3 status found a
# service stopped. See deploy/local/README.md.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ALL=(kafka redis redis-cluster postgres)

usage() {
  echo "usage: $0 up|down [--purge]|status [kafka|redis|redis-cluster|postgres ...]" >&2
  exit 2
}

action="${1:-}"
[[ "$action" == up || "$action" == down || "$action" == status ]] || usage
shift
flags=()
services=()
for arg in "$@"; do
  case "$arg" in
    --purge)
      [[ "$action" == down ]] || usage
      flags+=(--purge)
      ;;
    kafka | redis | redis-cluster | postgres) services+=("$arg") ;;
    *) usage ;;
  esac
done
((${#services[@]})) || services=("${ALL[@]}")

rc=0
for service in "${services[@]}"; do
  case "$action" in
    up)
      # Stop at the first failure: its log tail is the useful output, and later services may not matter.
      "$HERE/$service.sh" up || exit 1
      ;;
    down)
      "$HERE/$service.sh" down "${flags[@]}" || rc=1
      ;;
    status)
      code=0
      "$HERE/$service.sh" status || code=$?
      # Report the worst: 1 (broken) over 3 (stopped) over 0.
      if ((code == 1)) || ((code != 0 && rc != 1)); then
        rc=$code
      fi
      ;;
  esac
done
exit "$rc"
