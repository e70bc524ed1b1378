#!/usr/bin/env bash
# Runs the tests that deal in dates (ledger generations, retention, months,
# day buckets, expiry, reminders, webhooks' schedules) with the wall clock
# moved to other dates: a leap day, a year end and a date in
# each of the ledger's five generation slots. Every process the tests start
# (child processes and worker threads) reads the same moved clock
# (test/support/shifted-date.ts); timers still run at their real pace.
# A test that reads the calendar where it should take an injected clock
# fails here on some date. Usage: scripts/other-dates.sh [test files…]
# (default: the list below).
#
# Services keep the real calendar: libfaketime cannot move Redis's clock
# (it clashes with jemalloc's start-up) nor Dapr's (Go binaries read the
# time without libc). Every date here lies ahead of the real one, so an
# expiry set from a test's moved clock is late in Redis, never early; a test
# that asserts Redis's own expiry builds its clock from Redis's TIME. Files
# that start Dapr are left out.
set -euo pipefail
cd "$(dirname "$0")/.."
# The project's Node (the `node` devDependency) first: the preload is
# TypeScript, which the machine's older Node cannot load, and NODE_OPTIONS
# reaches every node the tests start.
export PATH="$PWD/node_modules/.bin:$PATH"

# The dates lie ahead of the real one (next year's, whatever year this is),
# so they stay in the services' future. 23:57 UTC: each run crosses midnight
# (and so the month or year) while it runs.
year=$(($(date -u +%Y) + 1))
leap=$year
while ! ((leap % 4 == 0 && (leap % 100 != 0 || leap % 400 == 0))); do leap=$((leap + 1)); done
# December 31 is a 31-day month's end as well as the year's (a January 31
# run was dropped for CI's time: it tested no boundary these two miss).
calendar_dates=(
  "$leap-02-29T23:57:00Z" # a leap day, the end of February
  "$year-12-31T23:57:00Z" # a year end, the end of a 31-day month
)
# The embedded ledger keeps each generation in slot generation % 5 (42 h
# generations under the default 7-day retention, tenancy/ledger-entry.ts):
# five dates 42 h apart fall in the five slots, for the files that read them.
generation_s=$((7 * 24 * 3600 / 4))
slot_base_s=$(date -u -d "$year-03-10T06:00:00Z" +%s)
slot_dates=()
for k in 0 1 2 3 4; do slot_dates+=("$(date -u -d "@$((slot_base_s + k * generation_s))" +%Y-%m-%dT%H:%M:%SZ)"); done
slot_files=(
  test/core/schema-version.test.ts
  test/tenancy/*ledger*.test.ts
  test/tenancy/usage-*.test.ts
  test/tenancy/billing.test.ts
)

# OTHER_DATES="d1 d2" with files given: those files at those dates only (when hunting one failure).
plan=()
if (($#)); then
  read -r -a dates <<<"${OTHER_DATES:-${calendar_dates[*]} ${slot_dates[*]}}"
  for date in "${dates[@]}"; do plan+=("$date|$*"); done
else
  files=(
    test/core/*.test.ts
    test/tenancy/*.test.ts
    test/webhooks/*.test.ts
    test/ops/upgrade-fixtures.test.ts
    test/providers/usage.test.ts
    test/gateway/billing-reservation.test.ts
    test/gateway/budget-alert-webhooks.test.ts
    test/gateway/console-data.test.ts
    test/gateway/file-retention.test.ts
    test/gateway/org-delete.test.ts
    test/gateway/route-billing.test.ts
    test/gateway/route-billing-journal.test.ts
    test/gateway/signup-throttle.test.ts
    test/jobs/job-actor.test.ts
    test/jobs/video-budget.test.ts
    test/agents/conversation-actor.test.ts
    test/client/client-units.test.ts
  )
  for date in "${calendar_dates[@]}"; do plan+=("$date|${files[*]}"); done
  for date in "${slot_dates[@]}"; do plan+=("$date|${slot_files[*]}"); done
fi

preload="$PWD/test/support/shifted-date.ts"
failed=()
for step in "${plan[@]}"; do
  date=${step%%|*}
  read -r -a step_files <<<"${step#*|}"
  # Leave out the files that start Dapr (see above), and the threaded
  # ledger's, which measures event-loop stalls and thread priorities (the
  # ledger it runs on a thread is the embedded one, whose files stay in).
  files=()
  for file in "${step_files[@]}"; do
    [[ "$file" == test/tenancy/threaded-ledger-store.test.ts ]] && continue
    grep -qE "support/(dapr-prerequisites|dapr-cluster)\.ts" "$file" || files+=("$file")
  done
  target_ms=$(($(date -u -d "$date" +%s) * 1000))
  shift_ms=$((target_ms - $(date -u +%s%3N)))
  printf '\n=== the clock at %s (shift %s ms, %s files)\n' "$date" "$shift_ms" "${#files[@]}"
  # No coverage thresholds: a subset of the suite covers less than the whole.
  if ! TROUPE_CLOCK_SHIFT_MS="$shift_ms" NODE_OPTIONS="--import=$preload ${NODE_OPTIONS:-}" \
    npx tap --disable-coverage --allow-empty-coverage --reporter=terse "${files[@]}"; then
    failed+=("$date")
  fi
done

if ((${#failed[@]})); then
  echo "other dates: failed at ${failed[*]}" >&2
  exit 1
fi
echo "other dates: ${#plan[@]} dates passed"
