#!/usr/bin/env bash
# The one test command (README, .ci/run): sets the host up, then lints, type-checks,
# builds and runs every test, ending with a plain "N passed, N failed, N skipped" line.
set -euo pipefail
cd "$(dirname "$0")/.."
export KUBEVIRT_TS_CACHE="${KUBEVIRT_TS_CACHE:-/var/cache/kubevirt-ts}"

scripts/setup-host.sh
[ -d node_modules ] || npm ci
# From here on, integration tests must find what setup prepared: they fail, not skip.
export KUBEVIRT_TS_REQUIRE_INTEGRATION=1

npm run lint
npm run typecheck
npm run build

status=0
npx vitest run --reporter=default --reporter=json --outputFile.json=test-results.json || status=$?
node scripts/print-test-summary.mjs test-results.json
exit "$status"
