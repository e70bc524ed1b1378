#!/usr/bin/env bash
# `npm run fuzz`: Schemathesis against a throwaway embedded Troupe, checking
# that the OpenAPI document says exactly what the server does. Two passes over
# every operation but logout: one with an API key, one with a dashboard
# session. Checks and statuses live in schemathesis.toml; the seed is fixed so
# a failure replays with the same command. Exits non-zero on any failure or
# error. Schemathesis is installed once from PyPI into a cached venv.
set -euo pipefail
cd "$(dirname "$0")/.."

version=4.32.5
cache="${TROUPE_CACHE_DIR:-$HOME/.cache/troupe}/schemathesis"
seed="${FUZZ_SEED:-20261123}"
# FUZZ_INCLUDE_PATH_REGEX narrows a run to some paths (e.g. '^/openai/';
# with FUZZ_MIN_CASES=0, the whole-run minimum below does not apply).
# Test cases per operation in the fuzzing phase (the coverage phase's cases
# come on top, whatever this says). 45 made 31,607 cases over both passes of
# the 116 operations the document now has, in about 25 minutes on 2 cores,
# more than CI's 90 minutes could hold with the rest; 10 keeps every
# operation fuzzed: 24,275 cases in 256 s (144 + 113), coverage phase whole.
examples="${FUZZ_EXAMPLES:-10}"
# Seconds Schemathesis waits for one answer before it reports a Network
# Error. Its default, 10, is a latency bound on a machine the run shares; 30
# still fails a request that hangs, without failing a schema check on one
# durable write that waited for a busy disk (.ci/run, before the fuzz step).
request_timeout="${FUZZ_REQUEST_TIMEOUT:-30}"
# One worker: Python 3.11's ast module is not thread-safe, and hypothesis
# parses lambdas while generating ("AST constructor recursion depth mismatch").
workers="${FUZZ_WORKERS:-1}"

if [[ "$("$cache/bin/st" --version 2>/dev/null)" != "st, version $version" ]]; then
  echo "installing schemathesis $version into $cache"
  python3 -m venv "$cache"
  "$cache/bin/pip" install -q "schemathesis==$version"
fi

run_dir=$(mktemp -d /tmp/troupe-fuzz.XXXXXX)
port=$(python3 scripts/free-port.py)
base="http://127.0.0.1:$port"

cleanup() {
  set +e
  [[ -n "${TROUPE_PID:-}" ]] && kill "$TROUPE_PID" 2>/dev/null && wait "$TROUPE_PID" 2>/dev/null
  rm -rf "$run_dir"
}
trap cleanup EXIT

# Embedded everything, simulated provider only: no Redis, Elasticsearch or
# real provider, whatever the calling shell (CI exports REDIS_URL) has set.
# Schemathesis signs up far more often than any person: the per-address
# signup limit is lifted (its 429 is tested in test/gateway/signup-throttle.test.ts).
# The provider keys are every registered provider's secret settings.
# The S3 file store's settings go too (CI exports MinIO's, and stops MinIO
# before this pass): the fuzz server keeps its files in its own data dir.
unset_settings=()
for name in $(compgen -e | grep '^S3_' || true); do
  unset_settings+=(-u "$name")
done
for name in $(node --input-type=module -e 'import { providerSecretEnv } from "./providers/registry.ts"; console.log(providerSecretEnv.join(" "))'); do
  unset_settings+=(-u "$name")
done
env -u REDIS_URL -u ELASTICSEARCH_URL "${unset_settings[@]}" \
  PORT="$port" HOST=127.0.0.1 TROUPE_DATA_DIR="$run_dir/data" TROUPE_MODE=embedded LOG_LEVEL=warn \
  OUTBOUND_ALLOW_HOSTS=127.0.0.1,localhost SIMULATED_VIDEO_DELAY_MS=600000 WEBHOOK_TIMEOUT_MS=1000 \
  SIGNUP_LIMIT_PER_ADDRESS=1000000 \
  node gateway/main.ts >"$run_dir/troupe.log" 2>&1 &
TROUPE_PID=$!
# HTTP through node (always here), so the script needs no curl.
healthy() { node -e 'fetch(process.argv[1]).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "$base/healthz"; }
post() { # url [bearer] body -> response body; exits non-zero on a non-2xx answer
  node -e '
    const [url, token, body] = process.argv.slice(1);
    const headers = { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) };
    fetch(url, { method: "POST", headers, body }).then(async (r) => {
      const text = await r.text();
      if (!r.ok) { console.error(`${r.status} ${text}`); process.exit(1); }
      process.stdout.write(text);
    });' "$@"
}
for _ in $(seq 1 100); do healthy && break; sleep 0.2; done
healthy || { cat "$run_dir/troupe.log"; echo "troupe did not start" >&2; exit 1; }

# A user (session token) and, in its development environment, a key with
# every scope and a rate limit the run cannot reach: the fuzzer checks the
# schema, not the limiter (429 is documented and tested elsewhere).
signup=$(post "$base/v1/auth/signup" "" '{"email":"fuzz@example.com","password":"a long fuzzing passphrase","name":"Fuzz"}')
field() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1], {}, {"d": d}))' "$1"; }
session=$(echo "$signup" | field 'd["session_token"]')
env_id=$(echo "$signup" | field '[e["environment"]["id"] for e in d["environments"] if not e["environment"]["production"]][0]')
api_key=$(post "$base/v1/environments/$env_id/api-keys" "$session" '{"name":"fuzz","rate_limit_per_minute":10000000}' | field 'd["key"]')

# What the hooks (scripts/fuzz_hooks.py) need to keep schema-valid media
# bodies within the rules that relate two fields: each model's voices, sizes
# and n, and an audio file the transcription route can download (a speech
# result stored by this Troupe; OUTBOUND_ALLOW_HOSTS above allows it).
get() { node -e 'fetch(process.argv[1], { headers: { authorization: `Bearer ${process.argv[2]}` } }).then(async (r) => { if (!r.ok) process.exit(1); process.stdout.write(await r.text()); })' "$@"; }
get "$base/v1/models" "$api_key" >"$run_dir/models.json"
export FUZZ_MODELS_FILE="$run_dir/models.json"
FUZZ_AUDIO_URL=$(post "$base/v1/audio/speech" "$api_key" '{"model":"simulated-speech","voice":"alto","text":"Audio for the fuzzer to transcribe."}' | field 'd["audio"]')
export FUZZ_AUDIO_URL
# An image a video job can animate (image_url), stored by this Troupe. The
# simulated clips are never ready during the run (SIMULATED_VIDEO_DELAY_MS
# above): the fuzzer checks the routes, not ffmpeg.
FUZZ_IMAGE_URL=$(post "$base/v1/images/generations" "$api_key" '{"model":"simulated-image","prompt":"an image for the fuzzer","size":"256x256","n":1}' | field 'd["images"][0]')
export FUZZ_IMAGE_URL

failed=0
for pass in api-key session; do
  token=$api_key
  [[ $pass == session ]] && token=$session
  printf '\n=== schemathesis: %s pass\n' "$pass"
  set +e
  "$cache/bin/st" run "$base/v1/openapi.json" \
    --header "Authorization: Bearer $token" \
    --exclude-path /v1/auth/logout ${FUZZ_INCLUDE_PATH_REGEX:+--include-path-regex "$FUZZ_INCLUDE_PATH_REGEX"} \
    --seed "$seed" --max-examples "$examples" --workers "$workers" --request-timeout "$request_timeout" \
    --generation-database none --no-color \
    --report junit --report-dir "${FUZZ_REPORT_DIR:-.cache/fuzz-report}/$pass" 2>&1 | tee "$run_dir/$pass.out"
  status=${PIPESTATUS[0]}
  set -e
  ((status == 0)) || failed=1
done

# Both summaries together at the end, where CI logs are read.
total=0
for pass in api-key session; do
  printf '\n=== %s pass summary\n' "$pass"
  sed -n '/= SUMMARY =/,$p' "$run_dir/$pass.out"
  n=$(sed -n 's/^ *\([0-9]*\) generated.*/\1/p' "$run_dir/$pass.out" | tail -1)
  total=$((total + ${n:-0}))
done
# The run must stay large enough to mean something: at least 5,000 cases
# over both passes, unless FUZZ_MIN_CASES says otherwise.
printf '\n=== %s test cases in both passes (minimum %s)\n' "$total" "${FUZZ_MIN_CASES:-5000}"
((total >= ${FUZZ_MIN_CASES:-5000})) || failed=1
# What the server said (warnings and errors only) when a pass failed: a
# Network Error's cause is in its log, which the cleanup deletes.
if ((failed)); then
  printf '\n=== the fuzz server log, last 80 lines\n'
  tail -n 80 "$run_dir/troupe.log"
fi
exit "$failed"
