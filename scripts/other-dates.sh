#!/usr/bin/env bash
# Runs the tests that deal in dates (ledger generations, retention, months,
# day buckets, expiry, reminders, webhooks' schedules) with the wall clock
# moved to other dates: a month end, a leap day, a year end and a date in
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

# 23:57 UTC: each run crosses midnight (and so the month or year) while it runs.
dates=(
  2027-01-31T23:57:00Z # a month end (31 days)
  2028-02-29T23:57:00Z # a leap day, the end of February
  2027-12-31T23:57:00Z # a year end
  2027-03-10T06:00:00Z # generation slot 0
  2027-03-12T00:00:00Z # generation slot 1
  2027-03-13T18:00:00Z # generation slot 2
  2027-03-15T12:00:00Z # generation slot 3
  2027-03-17T06:00:00Z # generation slot 4
)

# OTHER_DATES="d1 d2" narrows the run to those dates (when hunting one failure).
if [[ -n "${OTHER_DATES:-}" ]]; then read -r -a dates <<<"$OTHER_DATES"; fi

if (($#)); then
  files=("$@")
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
fi
# Leave out the files that start Dapr (see above).
kept=()
for file in "${files[@]}"; do
  grep -qE "support/(dapr-prerequisites|dapr-cluster)\.ts" "$file" || kept+=("$file")
done
files=("${kept[@]}")

preload="$PWD/test/support/shifted-date.ts"
failed=()
for date in "${dates[@]}"; do
  target_ms=$(($(date -u -d "$date" +%s) * 1000))
  shift_ms=$((target_ms - $(date -u +%s%3N)))
  printf '\n=== the clock at %s (shift %s ms)\n' "$date" "$shift_ms"
  # No coverage thresholds: a subset of the suite covers less than the whole.
  if ! TROUPE_CLOCK_SHIFT_MS="$shift_ms" NODE_OPTIONS="--import=$preload ${NODE_OPTIONS:-}" \
    npx tap --disable-coverage --allow-empty-coverage --reporter=base "${files[@]}"; then
    failed+=("$date")
  fi
done

if ((${#failed[@]})); then
  echo "other dates: failed at ${failed[*]}" >&2
  exit 1
fi
echo "other dates: ${#dates[@]} dates passed"
