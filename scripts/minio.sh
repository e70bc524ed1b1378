#!/usr/bin/env bash
# A local S3-compatible object store (MinIO) for Troupe's distributed file
# store: the S3 backend's tests and `npm run cluster` run against it. MinIO is
# built once from Go modules (no prebuilt binary download) and cached outside
# the repo, like dapr/build.sh caches Dapr. AGPLv3: a test and local-run
# dependency, never shipped inside Troupe.
#
#   scripts/minio.sh build    build (or reuse) the cached binary; prints its path
#   scripts/minio.sh [start]  build if needed, start a server on a free loopback
#                             port, create the bucket; prints S3_ENDPOINT=… etc.
#   scripts/minio.sh stop     stop the server started for MINIO_DATA_DIR
#   scripts/minio.sh status   say whether the recorded server answers
#
# Environment:
#   MINIO_DATA_DIR     data, log and pid file (default ${TROUPE_DATA_DIR:-./.troupe}/minio)
#   MINIO_PORT         S3 port on 127.0.0.1 (default: a free port)
#   S3_BUCKET          bucket to create (default troupe-files)
#   TROUPE_CACHE_DIR   cache root (default $HOME/.cache/troupe); binary in <cache>/minio/<version>/
set -euo pipefail
SCRIPTS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# The pseudo-version `@latest` resolves to; the RELEASE.* tags answer 403.
MINIO_VERSION="v0.0.0-20260212201848-7aac2a2c5b7c"
CACHE_ROOT="${TROUPE_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME:?HOME or TROUPE_CACHE_DIR must be set}/.cache}/troupe}/minio"
CACHE_ROOT="$(realpath -m "$CACHE_ROOT")"
OUT="$CACHE_ROOT/$MINIO_VERSION"
BIN="$OUT/minio"
DATA_ROOT="${MINIO_DATA_DIR:-${TROUPE_DATA_DIR:-./.troupe}/minio}"
BUCKET="${S3_BUCKET:-troupe-files}"
# Local test credentials only: the server listens on loopback.
ROOT_USER="${MINIO_ROOT_USER:-troupe-minio}"
ROOT_PASSWORD="${MINIO_ROOT_PASSWORD:-troupe-minio-secret}"

die() { echo "minio.sh: ERROR: $*" >&2; exit 1; }
say() { echo "minio.sh: $*" >&2; }
free_port() { python3 "$SCRIPTS_DIR/free-port.py"; }

build() {
  if [[ -x "$BIN" && -f "$OUT/.complete" ]]; then
    say "cached: $BIN"
    return 0
  fi
  command -v go >/dev/null || die "Go is required to build MinIO"
  mkdir -p "$CACHE_ROOT"
  exec 9>"$CACHE_ROOT/.lock"
  if ! flock -n 9; then
    say "another build holds $CACHE_ROOT/.lock; waiting"
    flock 9
  fi
  if [[ -x "$BIN" && -f "$OUT/.complete" ]]; then
    say "cached by a concurrent run: $BIN"
    return 0
  fi
  local stage="$CACHE_ROOT/.stage-$$" started
  started=$(date +%s)
  rm -rf "$stage"
  mkdir -p "$stage"
  say "building MinIO $MINIO_VERSION ($(go version | cut -d' ' -f3-)); ~7.5 min on 2 cores with empty Go caches"
  GOBIN="$stage" GOFLAGS=-mod=mod CGO_ENABLED=0 GOWORK=off \
    go install -trimpath -ldflags "-s -w" "github.com/minio/minio@$MINIO_VERSION"
  touch "$stage/.complete"
  rm -rf "$OUT"
  mv "$stage" "$OUT"
  say "built $BIN ($(du -sh "$BIN" | cut -f1)) in $(($(date +%s) - started)) s"
}

pid_file() { echo "$DATA_ROOT/minio.pid"; }
port_file() { echo "$DATA_ROOT/minio.port"; }

pid_alive() {
  local f
  f="$(pid_file)"
  [[ -s "$f" ]] || return 1
  local pid
  pid="$(cat "$f")"
  [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null && grep -qa 'minio' "/proc/$pid/cmdline" 2>/dev/null
}

print_env() {
  local port="$1"
  echo "S3_ENDPOINT=http://127.0.0.1:$port"
  echo "S3_BUCKET=$BUCKET"
  echo "S3_REGION=us-east-1"
  echo "S3_ACCESS_KEY_ID=$ROOT_USER"
  echo "S3_SECRET_ACCESS_KEY=$ROOT_PASSWORD"
}

start() {
  build
  mkdir -p "$DATA_ROOT"
  DATA_ROOT="$(cd "$DATA_ROOT" && pwd)"
  if pid_alive && [[ -s "$(port_file)" ]]; then
    say "already running (pid $(cat "$(pid_file)"))"
    print_env "$(cat "$(port_file)")"
    return 0
  fi
  local port="${MINIO_PORT:-$(free_port)}" console
  console="$(free_port)"
  mkdir -p "$DATA_ROOT/data"
  MINIO_ROOT_USER="$ROOT_USER" MINIO_ROOT_PASSWORD="$ROOT_PASSWORD" MINIO_BROWSER=off \
    MINIO_UPDATE=off MINIO_CI_CD=on \
    nohup "$BIN" server "$DATA_ROOT/data" --address "127.0.0.1:$port" --console-address "127.0.0.1:$console" \
    >"$DATA_ROOT/minio.log" 2>&1 &
  local pid=$!
  echo "$pid" >"$(pid_file)"
  echo "$port" >"$(port_file)"
  local ok=0
  for _ in $(seq 1 150); do
    if curl -fsS --max-time 2 "http://127.0.0.1:$port/minio/health/live" >/dev/null 2>&1; then ok=1; break; fi
    # Only whether the child still exists: its /proc cmdline (what pid_alive
    # checks, against a reused pid) can read empty while nohup execs MinIO,
    # which once ended this wait after 4 s with MinIO starting fine.
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  if ((ok == 0)); then
    tail -n 30 "$DATA_ROOT/minio.log" >&2 || true
    die "MinIO did not answer on 127.0.0.1:$port"
  fi
  # The bucket is a directory in MinIO's single-drive layout; creating it
  # there is what `mc mb` would do, without needing the client.
  mkdir -p "$DATA_ROOT/data/$BUCKET"
  say "started pid $(cat "$(pid_file)") on 127.0.0.1:$port"
  print_env "$port"
}

stop() {
  DATA_ROOT="$(realpath -m "$DATA_ROOT")"
  if ! pid_alive; then
    say "no running server recorded in $(pid_file)"
    rm -f "$(pid_file)"
    return 0
  fi
  local pid
  pid="$(cat "$(pid_file)")"
  kill -TERM "$pid"
  for _ in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$(pid_file)"; say "stopped"; return 0; }
    sleep 0.2
  done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$(pid_file)"
}

case "${1:-start}" in
  build) build; echo "$BIN" ;;
  start) start ;;
  stop) stop ;;
  status)
    DATA_ROOT="$(realpath -m "$DATA_ROOT")"
    if pid_alive; then echo "running (pid $(cat "$(pid_file)"), port $(cat "$(port_file)"))"; else echo "not running"; exit 1; fi
    ;;
  -h | --help) sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' ;;
  *) die "unknown command: $1" ;;
esac
