#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests (scripts/test.sh runs it).
#
#   scripts/pg-test-cluster.sh start      # prints `export …` lines: eval them
#   scripts/pg-test-cluster.sh env DIR    # the same lines for a running cluster
#   scripts/pg-test-cluster.sh stop DIR   # stops it and removes DIR
#
# `start` installs Debian's `postgresql` when missing (apt, as bootstrap.sh),
# runs initdb in a new temporary directory as an unprivileged user (root
# cannot run postgres: as root the server runs as `nobody`, which owns the
# directory), on a free loopback port with its unix socket in that directory,
# fsync on (the default), trust authentication (loopback and the socket only),
# and creates the database `herald`. It prints:
#
#   export HERALD_TEST_POSTGRES_URL=postgres://herald@127.0.0.1:PORT/herald
#   export HERALD_TEST_POSTGRES_DIR=DIR
#
# Everything the cluster writes is under DIR; `stop` removes it.
set -euo pipefail

die() { echo "pg-test-cluster: $*" >&2; exit 1; }

# The newest installed server's binaries (Debian: /usr/lib/postgresql/N/bin).
find_bindir() {
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
  if [[ -z "$dir" ]] && command -v pg_ctl >/dev/null; then dir=$(dirname "$(command -v pg_ctl)"); fi
  [[ -n "$dir" && -x "$dir/initdb" && -x "$dir/pg_ctl" ]] && echo "$dir"
}

install_postgres() {
  find_bindir >/dev/null && return 0
  echo "pg-test-cluster: installing postgresql" >&2
  local sudo=""; [[ $(id -u) -eq 0 ]] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >&2
  # Debian starts a `main` cluster on install; policy-rc.d would stop that
  # where services run, but a container has none running anyway.
  $sudo apt-get install -y -qq postgresql >/dev/null
  find_bindir >/dev/null || die "postgresql installed but no initdb/pg_ctl found"
}

# Runs a command as the cluster's owner: `nobody` when we are root.
as_owner() {
  if [[ $(id -u) -eq 0 ]]; then runuser -u nobody -- "$@"; else "$@"; fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

print_env() {
  local dir=$1
  [[ -f "$dir/port" ]] || die "$dir is not a cluster started by this script"
  echo "export HERALD_TEST_POSTGRES_URL=postgres://herald@127.0.0.1:$(cat "$dir/port")/herald"
  echo "export HERALD_TEST_POSTGRES_DIR=$dir"
}

start() {
  install_postgres
  local bin dir port
  bin=$(find_bindir)
  dir=$(mktemp -d "${TMPDIR:-/tmp}/herald-pg.XXXXXX")
  chmod 0755 "$dir"  # the socket directory: clients of any user connect
  if [[ $(id -u) -eq 0 ]]; then chown nobody "$dir"; fi
  if ! as_owner "$bin/initdb" -D "$dir/data" -U herald --auth=trust --encoding=UTF8 --locale=C.UTF-8 \
      >"$dir/initdb.log" 2>&1; then
    cat "$dir/initdb.log" >&2; rm -rf "$dir"; die "initdb failed"
  fi
  # A port taken between free_port and the bind makes pg_ctl fail: retry.
  local attempt
  for attempt in 1 2 3 4 5; do
    port=$(free_port)
    if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 -s start -o \
        "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=600 -c shared_buffers=64MB" >&2; then
      echo "$port" > "$dir/port"
      echo "$bin" > "$dir/bindir"
      break
    fi
    [[ $attempt -lt 5 ]] || { cat "$dir/server.log" >&2; rm -rf "$dir"; die "the server did not start"; }
  done
  as_owner "$bin/psql" -q -h "$dir" -p "$port" -U herald -d postgres -c "CREATE DATABASE herald" >&2 \
    || { stop "$dir"; die "could not create the database"; }
  echo "pg-test-cluster: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port, data in $dir" >&2
  print_env "$dir"
}

stop() {
  local dir=${1:-${HERALD_TEST_POSTGRES_DIR:-}}
  [[ -n "$dir" ]] || die "stop: which cluster? (give its directory)"
  [[ -d "$dir" ]] || return 0
  if [[ -f "$dir/bindir" && -f "$dir/data/postmaster.pid" ]]; then
    # fast: disconnect clients and stop; immediate if that takes too long.
    as_owner "$(cat "$dir/bindir")/pg_ctl" -D "$dir/data" -m fast -w -t 30 -s stop >&2 \
      || as_owner "$(cat "$dir/bindir")/pg_ctl" -D "$dir/data" -m immediate -w -t 30 -s stop >&2 || true
  fi
  rm -rf "$dir"
}

case "${1:-}" in
  start) start ;;
  stop) stop "${2:-}" ;;
  env) print_env "${2:-${HERALD_TEST_POSTGRES_DIR:-}}" ;;
  *) echo "usage: $0 start | env DIR | stop DIR" >&2; exit 2 ;;
esac
