#!/usr/bin/env bash
# `npm run image:smoke`: runs the image `npm run image` built and checks it
# end to end over real HTTP, each step printed:
#   /healthz 200 from the host, and the image's HEALTHCHECK from inside;
#   it runs as UID 1000, with one uWS binary whose error pages are JSON;
#   signup, then a chat completion on the simulated provider with the
#   development test key signup returns;
#   `podman restart`: the account still logs in and the key still works;
#   SIGTERM (`podman stop`) during a slow request: the request completes
#   (drained) and the container exits 0;
#   a new container on the same named volume (TROUPE_DATA_DIR): the account
#   and the key are still there.
# Removes its container and volume; exits non-zero naming the failed step.
#
#   bash scripts/image-smoke.sh [IMAGE]   (default localhost/troupe:latest)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/image-env.sh
source scripts/image-env.sh
image="${1:-$IMAGE_REPOSITORY:latest}"
started=$(date +%s)
name="troupe-smoke-$$"
volume="troupe-smoke-data-$$"
work=$(mktemp -d /tmp/troupe-image-smoke.XXXXXX)

step() { printf 'image-smoke: [%ss] %s\n' "$(($(date +%s) - started))" "$*"; }
fail() {
  echo "image-smoke: FAILED: $*" >&2
  if podman container exists "$name" 2>/dev/null; then
    echo "image-smoke: the container's last log lines:" >&2
    podman logs --tail 30 "$name" >&2 2>&1 || true
  fi
  exit 1
}
cleanup() {
  set +e
  podman rm --force --volumes --time 0 "$name" >/dev/null 2>&1
  podman volume rm --force "$volume" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

podman image exists "$image" || fail "no image $image: run npm run image first"
port=$(python3 scripts/free-port.py)
base="http://127.0.0.1:$port"
json() { node -e 'let s=""; process.stdin.on("data", (d) => (s += d)).on("end", () => { const v = new Function("r", `return r.${process.argv[1]}`)(JSON.parse(s)); if (v === undefined) process.exit(1); console.log(v); })' "$1"; }
# Prints "<status> <body>" ("000 …" when the connection failed).
request() {
  : >"$work/body"
  curl -sS -o "$work/body" -w '%{http_code}' "$@" 2>"$work/curl-error" || true
  printf ' %s%s' "$(cat "$work/body")" "$(cat "$work/curl-error")"
}

wait_healthy() {
  for _ in $(seq 1 150); do
    [[ "$(curl -s -o /dev/null -w '%{http_code}' "$base/healthz" 2>/dev/null)" == 200 ]] && return 0
    podman container exists "$name" && [[ "$(podman inspect --format '{{.State.Running}}' "$name")" == true ]] || fail "the container stopped before /healthz answered"
    sleep 0.2
  done
  fail "/healthz did not answer 200 within 30 s"
}

# Host network (no bridge here), bound to loopback on a free port. Pacing the
# simulated provider (5 tokens/s) makes a request long enough to be in flight
# when SIGTERM arrives. --no-healthcheck: podman's healthcheck timer needs
# systemd; the image's check runs below by hand.
start_container() {
  podman run -d --name "$name" --network=host --no-healthcheck \
    -e PORT="$port" -e HOST=127.0.0.1 -e SIMULATED_TOKENS_PER_SECOND=5 \
    -v "$volume:/var/lib/troupe" "$image" >/dev/null || fail "podman run"
  wait_healthy
}

step "image $image, $(image_size_mb "$image")"
podman volume create "$volume" >/dev/null
start_container
step "container $name on port $port, volume $volume at /var/lib/troupe: /healthz 200"
# The image's own HEALTHCHECK command, run in the container as podman would.
# (The whole JSON: podman 4.3's --format '{{.Healthcheck}}' fails now and then.)
mapfile -d '' check < <(podman image inspect "$image" |
  node -e 'let s=""; process.stdin.on("data", (d) => (s += d)).on("end", () => { const t = JSON.parse(s)[0]?.Healthcheck?.Test ?? []; if (t[0] === "CMD") process.stdout.write(t.slice(1).join("\0") + "\0"); })')
((${#check[@]})) || fail "the image has no HEALTHCHECK (built without --format docker?)"
podman exec "$name" "${check[@]}" || fail "the image's HEALTHCHECK (${check[*]}) failed"
step "the image's HEALTHCHECK (${check[0]} ${check[1]} fetch …/healthz) passes inside the container"

uid=$(podman exec "$name" id -u)
[[ "$uid" == 1000 ]] || fail "the process runs as UID $uid, not 1000"
bins=$(podman exec "$name" sh -c 'ls /app/node_modules/uWebSockets.js/dist/bin')
[[ "$bins" == "uws_linux_$(uname -m | sed 's/x86_64/x64/;s/aarch64/arm64/')_127.node" ]] || fail "uWS binaries in the image: $bins (expected only this platform's, ABI 127)"
# A request head over uWS's 16 KiB limit gets uWS's own 431 page: JSON once patched.
out=$(request "$base/healthz" -H "x-filler: $(head -c 20000 /dev/zero | tr '\0' a)")
[[ "$out" == "431 {\"error\":{\"code\":\"headers_too_large\""* ]] || fail "uWS's 431 page is not the patched JSON: $out"
step "runs as UID 1000; one uWS binary ($bins), patched: 431 answers JSON"

email="smoke-$$@example.com"
password="a long passphrase for the smoke test"
out=$(request "$base/v1/auth/signup" -H 'content-type: application/json' -d "{\"email\":\"$email\",\"password\":\"$password\"}")
[[ "$out" == 201* || "$out" == 200* ]] || fail "signup: $out"
key=$(json 'environments.find((e) => e.test_key).test_key.key' <"$work/body") || fail "signup returned no development test key: $out"
step "signup ${out%% *}: development test key ${key:0:13}…"

chat() {
  request "$base/v1/chat/completions" -H "authorization: Bearer $key" -H 'content-type: application/json' \
    -d "{\"model\":\"simulated-chat\",\"messages\":[{\"role\":\"user\",\"content\":\"$1\"}]}"
}
out=$(chat "Hello from the image")
[[ "$out" == "200 "* ]] || fail "chat completion: $out"
content=$(json content <"$work/body")
[[ "$content" == "Simulated reply to: Hello from the image" ]] || fail "chat completion answered: $out"
step "chat completion 200: \"$content\""

login() {
  out=$(request "$base/v1/auth/login" -H 'content-type: application/json' -d "{\"email\":\"$email\",\"password\":\"$password\"}")
  [[ "$out" == "200 "* ]] || fail "login $1: $out"
  json session_token <"$work/body" >/dev/null || fail "login $1 returned no session: $out"
  out=$(chat "Still here")
  [[ "$out" == "200 "* ]] || fail "the test key $1: $out"
}

podman restart --time 30 "$name" >/dev/null || fail "podman restart"
wait_healthy
login "after podman restart"
step "podman restart: /healthz 200, the account logs in, the key works"

# ~20 tokens at 5 tokens/s: about 4 s in flight when SIGTERM arrives.
long="Please keep this request open for a few seconds while the container is asked to stop"
chat "$long" >"$work/inflight" 2>&1 &
inflight=$!
sleep 1
stop_started=$(date +%s%N)
podman stop --time 30 "$name" >/dev/null || fail "podman stop"
stop_ms=$((($(date +%s%N) - stop_started) / 1000000))
wait "$inflight" || true
out=$(cat "$work/inflight")
[[ "$out" == "200 "*"Simulated reply to: $long"* ]] || fail "the request in flight at SIGTERM was not completed: $out"
code=$(podman inspect --format '{{.State.ExitCode}}' "$name")
[[ "$code" == 0 ]] || fail "exit code $code after SIGTERM (expected 0)"
podman logs "$name" >"$work/log" 2>&1 || fail "podman logs"
grep -q '"msg":"shutting down".*"signal":"SIGTERM"' "$work/log" || fail "the log has no SIGTERM shutdown line"
step "SIGTERM (podman stop) during a request: the request completed (200), exit code 0 after ${stop_ms} ms"

# A new container on the same volume: the data lives in the volume, not in
# the old container's writable layer.
podman rm --volumes "$name" >/dev/null || fail "podman rm"
start_container
login "in a new container on the same volume"
step "a new container on the same volume: the account logs in, the key works"
podman stop --time 30 "$name" >/dev/null || fail "podman stop"
code=$(podman inspect --format '{{.State.ExitCode}}' "$name")
[[ "$code" == 0 ]] || fail "exit code $code after SIGTERM (expected 0)"
step "passed; image $image, $(image_size_mb "$image")"
