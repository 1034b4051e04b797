# shellcheck shell=bash
# Helpers shared by deploy/local/{stack,kafka,redis,postgres}.sh. Sourced, never run.
#
# Contract for every service script: `<service>.sh up|down|status [--purge]`, exit 0 on success,
# 1 when the service can't be started or stopped (with the tail of its log on stderr), 2 on usage errors,
# 3 from `status` when the service is not running. State lives under $STACK_DIR (<repo>/.stack).

set -euo pipefail

LOCAL_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "$LOCAL_DIR/../.." && pwd)"
STACK_DIR="${PAREIS_STACK_DIR:-$REPO_DIR/.stack}"
LOG_DIR="$STACK_DIR/logs"

# Seconds to wait for a service to answer after starting it, and for it to exit after being asked to stop.
# Kafka's first start on a 2-core machine takes ~10 s; the margins are for a loaded CI machine.
READY_TIMEOUT="${PAREIS_STACK_READY_TIMEOUT:-120}"
STOP_TIMEOUT="${PAREIS_STACK_STOP_TIMEOUT:-60}"

say() { printf '%s\n' "$*"; }
warn() { printf '%s\n' "$*" >&2; }

# die_with_log SERVICE MESSAGE: print the message and the tail of the service's log, exit 1.
die_with_log() {
  local service="$1" message="$2" log="$LOG_DIR/$1.log"
  warn "ERROR: $service: $message"
  if [[ -s "$log" ]]; then
    warn "---- last 40 lines of $log ----"
    tail -n 40 "$log" >&2 || true
    warn "---- end of $log ----"
  else
    warn "(no log at $log)"
  fi
  exit 1
}

# pid_alive PID: true when a process with that pid exists (and is not a zombie).
pid_alive() {
  local pid="$1" state
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [[ -r "/proc/$pid/stat" ]] || return 1
  # Field 3 of /proc/PID/stat is the state; Z is a zombie, which is as good as dead.
  state="$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)"
  [[ -n "$state" && "$state" != "Z" ]]
}

# pid_gone PID: the negation of pid_alive, for wait_until.
pid_gone() { ! pid_alive "$1"; }

# read_pid FILE: the pid in FILE, or nothing.
read_pid() {
  local file="$1"
  if [[ -r "$file" ]]; then
    head -n 1 "$file" | tr -dc '0-9' || true
  fi
}

# pid_cmdline_has PID NEEDLE: true when the process's command line contains NEEDLE, so that a recycled pid
# of some unrelated process is never taken for (or killed as) ours.
pid_cmdline_has() {
  local pid="$1" needle="$2"
  pid_alive "$pid" || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$needle"
}

# port_open HOST PORT: true when something accepts TCP connections there.
port_open() {
  local host="$1" port="$2"
  (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null
}

# port_owner PORT: "pid/name" of the listener on PORT, when ss can tell.
port_owner() {
  local port="$1"
  ss -ltnpH "sport = :$port" 2>/dev/null | grep -o 'pid=[0-9]*' | head -n 1 | cut -d= -f2 || true
}

# wait_until SECONDS DESCRIPTION COMMAND...: poll COMMAND every 0.2 s until it succeeds or the deadline
# passes; returns 1 on timeout. A poll with a deadline, never a fixed sleep.
wait_until() {
  local timeout="$1" what="$2"
  shift 2
  local deadline=$((SECONDS + timeout))
  while ((SECONDS < deadline)); do
    if "$@" >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.2
  done
  warn "timed out after ${timeout}s waiting for $what"
  return 1
}

# stop_pid SERVICE PID NEEDLE: SIGTERM the process, wait for it to exit, SIGKILL after STOP_TIMEOUT.
stop_pid() {
  local service="$1" pid="$2" needle="$3"
  pid_cmdline_has "$pid" "$needle" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  if ! wait_until "$STOP_TIMEOUT" "$service (pid $pid) to exit" pid_gone "$pid"; then
    warn "$service: pid $pid ignored SIGTERM for ${STOP_TIMEOUT}s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    wait_until 10 "$service (pid $pid) to die" pid_gone "$pid" || return 1
  fi
}

# apt_install PACKAGE...: install Debian packages without letting their maintainer scripts start system-wide
# services (they would take the ports our own instances need).
_APT_UPDATED=0
apt_install() {
  command -v apt-get >/dev/null || {
    warn "apt-get not found; install $* by hand"
    return 1
  }
  local created_policy=0
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    # exit 101 = "action forbidden": invoke-rc.d then starts no service during the install.
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    created_policy=1
  fi
  local rc=0
  if ((_APT_UPDATED == 0)); then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq </dev/null || rc=$?
    _APT_UPDATED=1
  fi
  if ((rc == 0)); then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" </dev/null || rc=$?
  fi
  if ((created_policy)); then
    rm -f /usr/sbin/policy-rc.d
  fi
  return "$rc"
}

# with_lock SERVICE COMMAND...: run COMMAND holding an exclusive lock for SERVICE, so that two concurrent
# `up` calls (two pytest sessions, say) never start two instances.
with_lock() {
  local service="$1"
  shift
  mkdir -p "$STACK_DIR"
  local lock="$STACK_DIR/$service.lock"
  (
    if ! flock -w "$READY_TIMEOUT" 9; then
      warn "ERROR: $service: could not take $lock within ${READY_TIMEOUT}s"
      exit 1
    fi
    "$@"
  ) 9>"$lock"
}

# service_main SERVICE ARGS...: the argument parsing every service script shares; it calls the script's
# do_up, do_down PURGE and do_status functions.
service_main() {
  local service="$1"
  shift
  local action="${1:-}" purge=0
  shift || true
  for arg in "$@"; do
    case "$arg" in
      --purge) purge=1 ;;
      *)
        warn "usage: $service.sh up|down [--purge]|status"
        exit 2
        ;;
    esac
  done
  mkdir -p "$LOG_DIR"
  case "$action" in
    up) with_lock "$service" do_up ;;
    down) with_lock "$service" do_down "$purge" ;;
    status) do_status ;;
    *)
      warn "usage: $service.sh up|down [--purge]|status"
      exit 2
      ;;
  esac
}
