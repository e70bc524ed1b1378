#!/usr/bin/env bash
# Runs a local single-node Elasticsearch for Troupe's distributed vector index
# (`npm run elasticsearch`). Fetches the 9.4.3 integ-test-zip from Maven Central
# once (cached outside the repo), finds a Java 21+, and starts the server as an
# unprivileged user (ES refuses to run as root, and CI runs as root).
#
#   scripts/elasticsearch.sh [start]   start (or reuse) a server; prints ES_DATA_DIR=… then ELASTICSEARCH_URL=…
#   scripts/elasticsearch.sh stop      stop the server started for ES_DATA_DIR (pid file)
#   scripts/elasticsearch.sh status    say whether it answers on ES_PORT
#
# Environment:
#   ES_PORT            HTTP port on 127.0.0.1 (default 9200)
#   ES_HEAP            JVM heap, -Xms = -Xmx (default 1g)
#   ES_DATA_DIR        data, logs and pid file (default ${TROUPE_DATA_DIR:-./.troupe}/elasticsearch);
#                      when run as root and ES_USER cannot reach it (a private parent such as
#                      /root or a mktemp -d directory), /var/tmp/troupe-es-<hash of the path>
#                      instead (owned by ES_USER, mode 0700), printed as ES_DATA_DIR=…
#   TROUPE_CACHE_DIR   download cache (default $HOME/.cache/troupe); ES lives in <cache>/elasticsearch
#   ES_JAVA_HOME       a Java 21+ to use instead of searching for one
#   ES_USER            user that runs ES when this script runs as root (default troupe-es)
#   ES_START_TIMEOUT_S seconds to wait for /_cluster/health (default 180)
# Snapshots: path.repo is <ES_DATA_DIR>/snapshots, so a filesystem snapshot repository
# (docs/operations/backup-and-restore.md) may be registered under it.
set -euo pipefail

ES_VERSION="9.4.3"
ES_PORT="${ES_PORT:-9200}"
ES_HEAP="${ES_HEAP:-1g}"
ES_USER="${ES_USER:-troupe-es}"
ES_START_TIMEOUT_S="${ES_START_TIMEOUT_S:-180}"
CACHE_DIR="${TROUPE_CACHE_DIR:-$HOME/.cache/troupe}/elasticsearch"
DATA_ROOT="${ES_DATA_DIR:-${TROUPE_DATA_DIR:-./.troupe}/elasticsearch}"
URL="http://127.0.0.1:${ES_PORT}"
ZIP_NAME="elasticsearch-${ES_VERSION}.zip"

die() {
  echo "elasticsearch: ERROR: $*" >&2
  exit 1
}
say() { echo "elasticsearch: $*" >&2; }

[[ "$ES_PORT" =~ ^[0-9]+$ ]] && ((ES_PORT > 0 && ES_PORT < 65536)) || die "ES_PORT must be a port number, got '$ES_PORT'"
[[ "$ES_HEAP" =~ ^[0-9]+[mMgG]$ ]] || die "ES_HEAP must look like 512m or 2g, got '$ES_HEAP'"

mkdir -p "$DATA_ROOT"
DATA_ROOT="$(cd "$DATA_ROOT" && pwd)"
REQUESTED_ROOT="$DATA_ROOT"

ensure_es_user() {
  id "$ES_USER" >/dev/null 2>&1 && return 0
  say "creating system user $ES_USER (Elasticsearch refuses to run as root)"
  useradd -r -m -s /usr/sbin/nologin "$ES_USER" || id "$ES_USER" >/dev/null 2>&1 || die "could not create user $ES_USER"
}

# As root, ES runs as ES_USER, which must traverse every parent of its data
# directory. A checkout under /root or a mktemp -d directory (both 0700) is
# out of its reach, so the data then lives in a directory of its own under
# /var/tmp, named after the requested path so that stop and a restart find it.
if [[ "$(id -u)" == 0 ]]; then
  [[ "${1:-start}" == start ]] && ensure_es_user
  if id "$ES_USER" >/dev/null 2>&1 && ! runuser -u "$ES_USER" -- test -x "$(dirname "$DATA_ROOT")"; then
    DATA_ROOT="/var/tmp/troupe-es-$(printf '%s' "$REQUESTED_ROOT" | sha256sum | cut -c1-16)"
  fi
fi
PID_FILE="$DATA_ROOT/elasticsearch.pid"
LOG_DIR="$DATA_ROOT/logs"

# The substitute directory must be ES_USER's own, never something another user planted there.
prepare_substitute_root() {
  [[ "$DATA_ROOT" == "$REQUESTED_ROOT" ]] && return 0
  if [[ -L "$DATA_ROOT" ]] || { [[ -e "$DATA_ROOT" ]] && [[ "$(stat -c %U "$DATA_ROOT")" != "$ES_USER" ]]; }; then
    die "user $ES_USER cannot reach $REQUESTED_ROOT (a parent directory is private) and the substitute $DATA_ROOT exists but is not a directory owned by $ES_USER; remove it or set ES_DATA_DIR to a directory $ES_USER can reach."
  fi
  mkdir -p "$DATA_ROOT"
  chown "$ES_USER" "$DATA_ROOT"
  chmod 0700 "$DATA_ROOT"
  printf '%s\n' "$DATA_ROOT" >"$REQUESTED_ROOT/data-location"
  say "user $ES_USER cannot reach $REQUESTED_ROOT (a parent directory is private), so Elasticsearch keeps its data and logs in $DATA_ROOT"
}

# Answers when an Elasticsearch (not just anything) serves the port.
es_answers() {
  local body
  body="$(curl -sS --max-time 3 "$URL/_cluster/health" 2>/dev/null)" || return 1
  [[ "$body" == *'"cluster_name"'* && "$body" == *'"status"'* ]]
}

port_busy() {
  (exec 3<>"/dev/tcp/127.0.0.1/$ES_PORT") 2>/dev/null
}

pid_alive() {
  [[ -s "$PID_FILE" ]] || return 1
  local pid
  pid="$(cat "$PID_FILE")"
  [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null && grep -qa 'org.elasticsearch' "/proc/$pid/cmdline" 2>/dev/null
}

stop_server() {
  if ! pid_alive; then
    say "no running server recorded in $PID_FILE"
    rm -f "$PID_FILE"
    return 0
  fi
  local pid
  pid="$(cat "$PID_FILE")"
  say "stopping pid $pid"
  kill -TERM "$pid"
  for _ in $(seq 1 60); do
    kill -0 "$pid" 2>/dev/null || {
      rm -f "$PID_FILE"
      say "stopped"
      return 0
    }
    sleep 0.5
  done
  say "pid $pid ignored SIGTERM for 30 s; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$PID_FILE"
}

java_major() {
  # `java -version` prints e.g.: openjdk version "25.0.3" 2026-04-21 LTS  (or "1.8.0_392").
  local v
  v="$("$1/bin/java" -version 2>&1 | sed -n 's/.*version "\([0-9][0-9.]*\).*/\1/p' | head -n1)" || return 1
  [[ -n "$v" ]] || return 1
  if [[ "$v" == 1.* ]]; then v="${v#1.}"; fi
  echo "${v%%.*}"
}

find_java() {
  local candidates=() best="" best_major=0 c major
  [[ -n "${ES_JAVA_HOME:-}" ]] && candidates+=("$ES_JAVA_HOME")
  [[ -n "${JAVA_HOME:-}" ]] && candidates+=("$JAVA_HOME")
  shopt -s nullglob
  candidates+=(/usr/lib/jvm/temurin-2*-jdk-* /usr/lib/jvm/temurin-2* /usr/lib/jvm/java-2*-openjdk-* /usr/lib/jvm/jdk-2* \
    /usr/lib/jvm/*-2*-* /opt/java/openjdk /opt/java/* /opt/jdk-2* /usr/local/lib/jvm/* "$HOME"/.sdkman/candidates/java/*)
  shopt -u nullglob
  if command -v java >/dev/null 2>&1; then
    candidates+=("$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")")
  fi
  for c in "${candidates[@]}"; do
    [[ -x "$c/bin/java" ]] || continue
    major="$(java_major "$c")" || continue
    if ((major >= 21 && major > best_major)); then
      best="$c"
      best_major="$major"
    fi
    # An explicit ES_JAVA_HOME wins when it is good enough.
    if [[ -n "${ES_JAVA_HOME:-}" && "$c" == "$ES_JAVA_HOME" && "$major" -ge 21 ]]; then
      echo "$c"
      return 0
    fi
  done
  [[ -n "$best" ]] || return 1
  echo "$best"
}

# Runs a command as the ES user when we are root, else as ourselves.
as_es_user() {
  if [[ "$(id -u)" == 0 ]]; then runuser -u "$ES_USER" -- "$@"; else "$@"; fi
}

fetch_and_unpack() {
  mkdir -p "$CACHE_DIR"
  exec 9>"$CACHE_DIR/.lock"
  flock 9
  if [[ ! -s "$CACHE_DIR/$ZIP_NAME" ]]; then
    command -v mvn >/dev/null 2>&1 || die "mvn is needed to fetch Elasticsearch from Maven Central (apt-get install -y maven)"
    say "fetching $ZIP_NAME from Maven Central into $CACHE_DIR"
    local stage="$CACHE_DIR/.stage-$$"
    rm -rf "$stage"
    mkdir -p "$stage"
    mvn -q -B org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
      "-Dartifact=org.elasticsearch.distribution.integ-test-zip:elasticsearch:${ES_VERSION}:zip" \
      "-DoutputDirectory=$stage" >&2 || die "mvn could not fetch org.elasticsearch.distribution.integ-test-zip:elasticsearch:${ES_VERSION}:zip"
    mv "$stage/$ZIP_NAME" "$CACHE_DIR/$ZIP_NAME"
    rm -rf "$stage"
  fi
  flock -u 9
}

# ES must be reachable by the ES user: /root is usually 0700, so when root's
# cache is out of its reach the unpacked copy lives in that user's home.
install_dir_for() {
  local base="$1"
  echo "$base/elasticsearch-${ES_VERSION}"
}

unpack_into() {
  local base="$1" target
  target="$(install_dir_for "$base")"
  mkdir -p "$base"
  exec 8>"$base/.unpack.lock"
  flock 8
  if [[ ! -x "$target/bin/elasticsearch" ]]; then
    say "unpacking $ZIP_NAME into $base"
    local stage="$base/.unpack-$$"
    rm -rf "$stage"
    mkdir -p "$stage"
    unzip -q "$CACHE_DIR/$ZIP_NAME" -d "$stage" || die "could not unzip $CACHE_DIR/$ZIP_NAME (corrupt download? delete it and retry)"
    [[ -x "$stage/elasticsearch-${ES_VERSION}/bin/elasticsearch" ]] || die "unexpected zip layout in $ZIP_NAME"
    rm -rf "$target"
    mv "$stage/elasticsearch-${ES_VERSION}" "$target"
    rm -rf "$stage"
  fi
  flock -u 8
  echo "$target"
}

start_server() {
  if es_answers; then
    say "already running on $URL"
    echo "ES_DATA_DIR=$DATA_ROOT"
    echo "ELASTICSEARCH_URL=$URL"
    return 0
  fi
  if port_busy; then
    die "port $ES_PORT on 127.0.0.1 is busy with something that is not Elasticsearch (GET /_cluster/health did not answer); choose another ES_PORT"
  fi
  if pid_alive; then
    die "an Elasticsearch for $DATA_ROOT is running (pid $(cat "$PID_FILE")) but does not answer on port $ES_PORT; stop it first: ES_DATA_DIR=$DATA_ROOT $0 stop"
  fi

  local java_home
  java_home="$(find_java)" || die "no Java 21+ found (looked at ES_JAVA_HOME, JAVA_HOME, /usr/lib/jvm/temurin-2*, /usr/lib/jvm/java-2*-openjdk-*, /opt/java, java on PATH); install e.g. temurin-21-jdk or set ES_JAVA_HOME"
  say "using Java $(java_major "$java_home") at $java_home"

  command -v curl >/dev/null 2>&1 || die "curl is needed"
  command -v unzip >/dev/null 2>&1 || die "unzip is needed (apt-get install -y unzip)"
  fetch_and_unpack

  local es_home
  if [[ "$(id -u)" == 0 ]]; then
    ensure_es_user
    prepare_substitute_root
    if runuser -u "$ES_USER" -- test -r "$CACHE_DIR/$ZIP_NAME"; then
      es_home="$(unpack_into "$CACHE_DIR")"
    else
      local user_home
      user_home="$(getent passwd "$ES_USER" | cut -d: -f6)"
      [[ -n "$user_home" && -d "$user_home" ]] || die "user $ES_USER has no home directory to hold the unpacked server"
      es_home="$(unpack_into "$user_home/.cache/troupe/elasticsearch")"
      chown "$ES_USER" "$user_home/.cache" "$user_home/.cache/troupe" "$user_home/.cache/troupe/elasticsearch"
    fi
    mkdir -p "$LOG_DIR" "$DATA_ROOT/data" "$DATA_ROOT/snapshots"
    chown -R "$ES_USER" "$es_home" "$DATA_ROOT"
    runuser -u "$ES_USER" -- test -w "$DATA_ROOT/data" ||
      die "user $ES_USER cannot write to $DATA_ROOT/data; set ES_DATA_DIR to a directory it can reach."
  else
    es_home="$(unpack_into "$CACHE_DIR")"
    mkdir -p "$LOG_DIR" "$DATA_ROOT/data" "$DATA_ROOT/snapshots"
  fi

  say "starting Elasticsearch $ES_VERSION on $URL (heap $ES_HEAP, data $DATA_ROOT)"
  local start_log="$LOG_DIR/start.out"
  rm -f "$PID_FILE"
  # -d returns once the node has started (or failed); disk watermarks are off
  # because a shared dev disk that is 90 % full would otherwise block writes.
  if ! as_es_user env ES_JAVA_HOME="$java_home" ES_JAVA_OPTS="-Xms$ES_HEAP -Xmx$ES_HEAP" \
    "$es_home/bin/elasticsearch" -d -p "$PID_FILE" \
    -E cluster.name=troupe \
    -E node.name="troupe-$ES_PORT" \
    -E discovery.type=single-node \
    -E network.host=127.0.0.1 \
    -E http.port="$ES_PORT" \
    -E path.data="$DATA_ROOT/data" \
    -E path.logs="$LOG_DIR" \
    -E path.repo="$DATA_ROOT/snapshots" \
    -E xpack.security.enabled=false \
    -E cluster.routing.allocation.disk.threshold_enabled=false \
    >"$start_log" 2>&1; then
    echo "--- $start_log" >&2
    tail -n 40 "$start_log" >&2 || true
    echo "--- $LOG_DIR/troupe.log" >&2
    tail -n 40 "$LOG_DIR/troupe.log" >&2 2>/dev/null || true
    die "Elasticsearch failed to start (logs above)"
  fi

  local deadline=$((SECONDS + ES_START_TIMEOUT_S))
  until es_answers; do
    if ((SECONDS >= deadline)); then
      tail -n 40 "$LOG_DIR/troupe.log" >&2 2>/dev/null || tail -n 40 "$start_log" >&2 || true
      die "Elasticsearch did not answer GET $URL/_cluster/health within ${ES_START_TIMEOUT_S} s (log tail above; stop it with: ES_DATA_DIR=$DATA_ROOT $0 stop)"
    fi
    if [[ -s "$PID_FILE" ]] && ! pid_alive; then
      tail -n 40 "$LOG_DIR/troupe.log" >&2 2>/dev/null || tail -n 40 "$start_log" >&2 || true
      die "Elasticsearch exited during start-up (log tail above)"
    fi
    sleep 1
  done
  say "ready (pid $(cat "$PID_FILE" 2>/dev/null || echo '?'), data in $DATA_ROOT/data, logs in $LOG_DIR)"
  echo "ES_DATA_DIR=$DATA_ROOT"
  echo "ELASTICSEARCH_URL=$URL"
}

case "${1:-start}" in
  start) start_server ;;
  stop) stop_server ;;
  status)
    if es_answers; then
      echo "ELASTICSEARCH_URL=$URL"
    else
      say "nothing answers on $URL"
      exit 1
    fi
    ;;
  *) die "usage: $0 [start|stop|status]" ;;
esac
