#!/usr/bin/env bash
# A local 3-primary Redis Cluster (no replicas, nothing persisted) for the
# cluster tests in CI and for trying Troupe on Redis Cluster by hand.
#
#   scripts/redis-cluster.sh [start]  start three redis-server processes in
#                                     cluster mode on free loopback ports, join
#                                     them, wait for cluster_state:ok; prints
#                                     REDIS_CLUSTER_NODES=127.0.0.1:P1,…
#   scripts/redis-cluster.sh stop     stop the servers started for REDIS_CLUSTER_DIR
#
# Environment:
#   REDIS_CLUSTER_DIR  node configs, logs and pid files (default ${TROUPE_DATA_DIR:-./.troupe}/redis-cluster)
set -euo pipefail
SCRIPTS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

DIR="$(realpath -m "${REDIS_CLUSTER_DIR:-${TROUPE_DATA_DIR:-./.troupe}/redis-cluster}")"

die() { echo "redis-cluster.sh: ERROR: $*" >&2; exit 1; }
say() { echo "redis-cluster.sh: $*" >&2; }
# A port P with P+10000 free too: each node's cluster bus listens on P+10000.
free_port() { python3 "$SCRIPTS_DIR/free-port.py" --offset 10000; }

start() {
  command -v redis-server >/dev/null || die "redis-server is not installed (apt-get install -y redis-server)"
  command -v redis-cli >/dev/null || die "redis-cli is not installed (apt-get install -y redis-tools)"
  [[ -e "$DIR/ports" ]] && die "$DIR/ports exists: stop the running cluster first (scripts/redis-cluster.sh stop)"
  mkdir -p "$DIR"
  local nodes=() port
  for i in 1 2 3; do
    port=$(free_port)
    mkdir -p "$DIR/$port"
    redis-server --port "$port" --bind 127.0.0.1 --cluster-enabled yes --cluster-config-file "$DIR/$port/nodes.conf" \
      --save "" --appendonly no --dir "$DIR/$port" --daemonize yes --pidfile "$DIR/$port/redis.pid" --logfile "$DIR/$port/redis.log"
    echo "$port" >>"$DIR/ports"
    for _ in $(seq 1 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
    redis-cli -p "$port" ping >/dev/null || die "redis-server on port $port did not start (see $DIR/$port/redis.log)"
    nodes+=("127.0.0.1:$port")
  done
  redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >"$DIR/create.log" 2>&1 ||
    { cat "$DIR/create.log" >&2; die "redis-cli --cluster create failed"; }
  for node in "${nodes[@]}"; do
    port=${node##*:}
    for _ in $(seq 1 200); do redis-cli -p "$port" cluster info | grep -q '^cluster_state:ok' && break; sleep 0.1; done
    redis-cli -p "$port" cluster info | grep -q '^cluster_state:ok' || die "$node never reported cluster_state:ok"
  done
  say "3 primaries up in $DIR"
  local IFS=,
  echo "REDIS_CLUSTER_NODES=${nodes[*]}"
}

stop() {
  [[ -f "$DIR/ports" ]] || { say "nothing recorded in $DIR"; return 0; }
  while read -r port; do
    [[ -f "$DIR/$port/redis.pid" ]] && kill "$(cat "$DIR/$port/redis.pid")" 2>/dev/null || true
  done <"$DIR/ports"
  rm -f "$DIR/ports"
  say "stopped"
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  *) die "usage: $0 start|stop" ;;
esac
