#!/usr/bin/env bash
# Smoke test of Troupe's Dapr runtime (dapr/build.sh): starts Redis,
# placement, scheduler, a throwaway Python actor app and daprd with the
# rendered components/ templates, all on free loopback ports; then invokes
# an actor method, writes and reads actor state, fires a reminder (through
# the scheduler), publishes to pub/sub, checks /v1.0/metadata, and stops
# everything it started. Node-free: needs bash, curl, python3, redis-server
# (installed with apt-get when missing and running as root).
#
# Usage: bash dapr/smoke.sh
#   KEEP_RUN=1 keeps the run directory (logs); SMOKE_REDIS_PASSWORD= runs
#   Redis without a password (the default sets a random one).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
BIN="$HERE/.bin"
APP_ID=smoke
ACTOR_TYPE=Smoke
READY_TIMEOUT_S=60

log() { echo "dapr/smoke.sh: $*"; }
die() { echo "dapr/smoke.sh: FAIL: $*" >&2; exit 1; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

for tool in curl python3; do
  command -v "$tool" >/dev/null || die "$tool is required"
done
if ! command -v redis-server >/dev/null; then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    log "installing redis-server (Debian package)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  else
    die "redis-server is required (apt-get install redis-server)"
  fi
fi
bash "$HERE/build.sh"

RUN="$(mktemp -d "${TMPDIR:-/tmp}/troupe-dapr-smoke.XXXXXX")"
declare -a PIDS=() NAMES=()
ok=0

stop_all() {
  local i pid name t0
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
    pid=${PIDS[i]} name=${NAMES[i]}
    kill -0 "$pid" 2>/dev/null || continue
    t0=$(now_ms)
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      log "$name (pid $pid) ignored SIGTERM for 10 s; SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
    log "stopped $name in $(( $(now_ms) - t0 )) ms"
  done
}
on_exit() {
  local rc=$?
  stop_all
  if ((ok == 0)); then
    for f in "$RUN"/*.log; do
      [[ -f "$f" ]] || continue
      echo "----- last lines of $f" >&2
      tail -n 25 "$f" >&2
    done
  fi
  if [[ "${KEEP_RUN:-0}" == 1 ]]; then log "run directory kept: $RUN"; else rm -rf "$RUN"; fi
  exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT TERM

# start NAME CMD...: runs CMD in the background, logging to $RUN/NAME.log.
start() {
  local name=$1; shift
  "$@" >"$RUN/$name.log" 2>&1 &
  PIDS+=($!) NAMES+=("$name")
  STARTED_MS=$(now_ms)
}

# wait_http NAME URL: polls until URL answers 2xx; fails if NAME's process dies.
wait_http() {
  local name=$1 url=$2 deadline=$(( $(now_ms) + READY_TIMEOUT_S * 1000 )) code
  while :; do
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$url" || true)
    [[ $code == 2?? ]] && break
    kill -0 "${PIDS[-1]}" 2>/dev/null || die "$name exited before $url answered"
    (( $(now_ms) < deadline )) || die "$name: $url not ready after ${READY_TIMEOUT_S} s (last status $code)"
    sleep 0.05
  done
  log "$name ready in $(( $(now_ms) - STARTED_MS )) ms ($url -> $code)"
}

# Free loopback ports, all held open at once so none repeats.
read -r P_REDIS P_PLACEMENT P_PLACEMENT_HZ P_PLACEMENT_METRICS P_PLACEMENT_RAFT \
  P_SCHED P_SCHED_HZ P_SCHED_METRICS P_ETCD_CLIENT P_ETCD_PEER \
  P_APP P_DAPR_HTTP P_DAPR_GRPC P_DAPR_INTERNAL P_DAPR_METRICS < <(python3 - <<'EOF'
import socket
socks = []
for _ in range(15):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
)

# --- Redis, by default with a password so the components' redisPassword is
# exercised (SMOKE_REDIS_PASSWORD= runs it without one).
REDIS_PASSWORD="${SMOKE_REDIS_PASSWORD-smoke-$RANDOM$RANDOM}"
start redis redis-server --bind 127.0.0.1 --port "$P_REDIS" \
  ${REDIS_PASSWORD:+--requirepass "$REDIS_PASSWORD"} --save "" --appendonly no --dir "$RUN"
redis() { REDISCLI_AUTH="$REDIS_PASSWORD" redis-cli -h 127.0.0.1 -p "$P_REDIS" "$@"; }
for _ in $(seq 200); do [[ "$(redis ping 2>/dev/null)" == PONG ]] && break; sleep 0.05; done
[[ "$(redis ping 2>/dev/null)" == PONG ]] || die "redis did not answer PING"
log "redis ready in $(( $(now_ms) - STARTED_MS )) ms (127.0.0.1:$P_REDIS)"

# --- Components: render the templates into the run directory.
mkdir -p "$RUN/components"
for f in "$REPO"/components/*.yaml; do
  sed -e "s|{{REDIS_HOST}}|127.0.0.1:$P_REDIS|g" -e "s|{{REDIS_PASSWORD}}|$REDIS_PASSWORD|g" \
    "$f" >"$RUN/components/$(basename "$f")"
done
! grep -q '{{' "$RUN"/components/*.yaml || die "unrendered placeholder in components"

# --- Placement. --initial-cluster sets its raft port (default 8201).
start placement "$BIN/placement" \
  --listen-address 127.0.0.1 --port "$P_PLACEMENT" \
  --healthz-listen-address 127.0.0.1 --healthz-port "$P_PLACEMENT_HZ" \
  --metrics-listen-address 127.0.0.1 --metrics-port "$P_PLACEMENT_METRICS" \
  --initial-cluster "dapr-placement-0=127.0.0.1:$P_PLACEMENT_RAFT"
wait_http placement "http://127.0.0.1:$P_PLACEMENT_HZ/healthz"

# --- Scheduler with embedded etcd.
start scheduler "$BIN/scheduler" \
  --listen-address 127.0.0.1 --port "$P_SCHED" \
  --healthz-listen-address 127.0.0.1 --healthz-port "$P_SCHED_HZ" \
  --metrics-listen-address 127.0.0.1 --metrics-port "$P_SCHED_METRICS" \
  --etcd-data-dir "$RUN/scheduler-etcd" \
  --etcd-client-listen-address 127.0.0.1 --etcd-client-port "$P_ETCD_CLIENT" \
  --etcd-initial-cluster "dapr-scheduler-server-0=http://localhost:$P_ETCD_PEER"
wait_http scheduler "http://127.0.0.1:$P_SCHED_HZ/healthz"

# --- The actor app: Dapr's HTTP actor callback protocol, nothing more.
cat >"$RUN/app.py" <<'EOF'
import json, sys
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler

ACTOR_TYPE = sys.argv[2]
reminders = []

class App(BaseHTTPRequestHandler):
    def reply(self, status, body=None):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def do_GET(self):
        if self.path == "/dapr/config":
            return self.reply(200, {"entities": [ACTOR_TYPE], "actorIdleTimeout": "1h",
                                    "drainOngoingCallTimeout": "10s", "drainRebalancedActors": True})
        if self.path == "/healthz":
            return self.reply(200, {})
        if self.path == "/smoke/reminders":
            return self.reply(200, reminders)
        self.reply(404, {"error": self.path})

    def do_PUT(self):
        parts = self.path.strip("/").split("/")
        body = self.body()
        # /actors/{type}/{id}/method/remind/{name} and /actors/{type}/{id}/method/{m}
        if len(parts) == 6 and parts[:2] == ["actors", ACTOR_TYPE] and parts[3:5] == ["method", "remind"]:
            reminders.append({"id": parts[2], "name": parts[5]})
            return self.reply(200)
        if len(parts) == 5 and parts[:2] == ["actors", ACTOR_TYPE] and parts[3] == "method":
            return self.reply(200, {"actor": parts[2], "method": parts[4], "pong": True,
                                    "echo": body.decode() or None})
        self.reply(404, {"error": self.path})

    def do_DELETE(self):
        self.reply(200)

    def log_message(self, fmt, *args):
        sys.stderr.write("app: " + fmt % args + "\n")

ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), App).serve_forever()
EOF
start app python3 "$RUN/app.py" "$P_APP" "$ACTOR_TYPE"
wait_http app "http://127.0.0.1:$P_APP/healthz"

# --- daprd. DAPR_HOST_IP and --dapr-internal-grpc-listen-address keep the
# address it registers with placement (and calls other sidecars on) on loopback.
DAPRD_ARGS=(
  --app-id "$APP_ID" --app-port "$P_APP" --app-channel-address 127.0.0.1
  --dapr-listen-addresses 127.0.0.1
  --dapr-http-port "$P_DAPR_HTTP" --dapr-grpc-port "$P_DAPR_GRPC"
  --dapr-internal-grpc-listen-address 127.0.0.1 --dapr-internal-grpc-port "$P_DAPR_INTERNAL"
  --metrics-listen-address 127.0.0.1 --metrics-port "$P_DAPR_METRICS"
  --placement-host-address "127.0.0.1:$P_PLACEMENT"
  --scheduler-host-address "127.0.0.1:$P_SCHED"
  --resources-path "$RUN/components"
  --config "$HERE/config.yaml"
)
start daprd env DAPR_HOST_IP=127.0.0.1 "$BIN/daprd" "${DAPRD_ARGS[@]}"
log "daprd ${DAPRD_ARGS[*]}"
DAPR="http://127.0.0.1:$P_DAPR_HTTP"
wait_http daprd "$DAPR/v1.0/healthz/outbound"
wait_http daprd "$DAPR/v1.0/healthz"

# --- Checks.
json_check() { # json_check LABEL PYTHON-EXPR-ON-d JSON
  python3 -c 'import json,sys; d=json.loads(sys.argv[2]); sys.exit(0 if eval("(" + sys.argv[1] + ")") else 1)' "$2" "$3" ||
    die "$1: got $3"
}

t0=$(now_ms)
resp=$(curl -sS --fail-with-body --max-time 10 -X POST "$DAPR/v1.0/actors/$ACTOR_TYPE/1/method/ping" \
  -H 'Content-Type: application/json' -d '{"hello":"dapr"}') || die "actor invoke: $resp"
json_check "actor invoke" 'd["pong"] is True and d["actor"] == "1" and d["method"] == "ping"' "$resp"
log "actor invoke POST /v1.0/actors/$ACTOR_TYPE/1/method/ping -> $resp ($(( $(now_ms) - t0 )) ms, first call)"

curl -sS --fail-with-body --max-time 10 -X POST "$DAPR/v1.0/actors/$ACTOR_TYPE/1/state" \
  -H 'Content-Type: application/json' \
  -d '[{"operation":"upsert","request":{"key":"greeting","value":{"n":1}}}]' >/dev/null ||
  die "actor state transaction failed"
state=$(curl -sS --fail-with-body --max-time 10 "$DAPR/v1.0/actors/$ACTOR_TYPE/1/state/greeting") ||
  die "actor state read: $state"
json_check "actor state read" 'd == {"n": 1}' "$state"
[[ "$(redis exists "$APP_ID||$ACTOR_TYPE||1||greeting")" == 1 ]] ||
  die "actor state key not found in Redis: $(redis --scan | head)"
log "actor state: transaction + read back $state; Redis key '$APP_ID||$ACTOR_TYPE||1||greeting'"

t0=$(now_ms)
curl -sS --fail-with-body --max-time 10 -X POST "$DAPR/v1.0/actors/$ACTOR_TYPE/1/reminders/smoke" \
  -H 'Content-Type: application/json' -d '{"dueTime":"0s","period":"R1/PT1S"}' >/dev/null ||
  die "reminder registration failed"
for _ in $(seq 300); do
  fired=$(curl -s --max-time 1 "http://127.0.0.1:$P_APP/smoke/reminders" || true)
  [[ "$fired" == *'"smoke"'* ]] && break
  sleep 0.05
done
json_check "reminder (via scheduler)" 'any(r["name"] == "smoke" and r["id"] == "1" for r in d)' "$fired"
log "reminder fired through the scheduler in $(( $(now_ms) - t0 )) ms"

curl -sS --fail-with-body --max-time 10 -X POST "$DAPR/v1.0/publish/pubsub/smoke" \
  -H 'Content-Type: application/json' -d '{"hello":"pubsub"}' >/dev/null || die "publish failed"
[[ "$(redis xlen smoke)" -ge 1 ]] || die "published message not in Redis stream 'smoke'"
log "pub/sub: published to Redis stream 'smoke'"

meta=$(curl -sS --fail-with-body --max-time 10 "$DAPR/v1.0/metadata") || die "metadata: $meta"
json_check "metadata actorRuntime" '
d["actorRuntime"]["runtimeStatus"] == "RUNNING"
and d["actorRuntime"]["hostReady"] is True
and d["actorRuntime"]["placement"] == "placement: connected"
and {"type": "Smoke", "count": 1} in d["actorRuntime"]["activeActors"]
and {c["name"]: c["type"] for c in d["components"]} == {"statestore": "state.redis", "pubsub": "pubsub.redis"}
' "$meta"
log "metadata: $(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(json.dumps({"runtimeVersion": d.get("runtimeVersion"), "actorRuntime": d["actorRuntime"], "components": [c["name"] + "=" + c["type"] for c in d["components"]]}))' "$meta")"

ok=1
log "PASS"
