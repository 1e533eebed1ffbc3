#!/usr/bin/env bash
# The one test command (README, .ci/run): sets the host up (with the Kubernetes binaries
# the real-API-server tests need), then lints, type-checks,
# builds and runs every test, ending with a plain "N passed, N failed, N skipped" line.
# Every stage runs even when an earlier one fails, so one run shows every problem; the
# exit status is non-zero when any stage failed.
set -uo pipefail
cd "$(dirname "$0")/.."
export KUBEVIRT_TS_CACHE="${KUBEVIRT_TS_CACHE:-/var/cache/kubevirt-ts}"

scripts/setup-host.sh --with-kube || exit 1
if [ ! -d node_modules ]; then npm ci || exit 1; fi
# From here on, integration tests must find what setup prepared: they fail, not skip.
export KUBEVIRT_TS_REQUIRE_INTEGRATION=1

failed=()
rc=0
stage() {
  local name=$1
  shift
  echo "=== $name: $*"
  local t0=$SECONDS
  rc=0
  "$@" || { rc=$?; failed+=("$name"); }
  echo "=== $name took $((SECONDS - t0)) s"
}

stage lint npm run lint
stage typecheck npm run typecheck
stage build npm run build
# The one-node cluster's Debian packages and the container images (scripts/images/build.sh,
# cached by content: seconds when warm). They need dist/, so they come after the build.
stage cluster-setup scripts/cluster/setup.sh
rm -f test-results*.json
# The JSON reports leave out why a file failed in a hook: scripts/vitest-hook-errors.ts
# writes that beside them (KVTS_HOOK_ERRORS) for the closing summary.
hooks=--reporter=./scripts/vitest-hook-errors.ts
KVTS_HOOK_ERRORS=test-results-hook-errors.json stage tests npx vitest run --reporter=default $hooks \
  --reporter=json --outputFile.json=test-results.json
tests_rc=$rc
# Tests that restart shared host services or start their own (a second libvirtd for
# migration) run after everything else, one file at a time: two of them at once would
# fight over the daemon and its migration ports.
VITEST_SERIAL=1 KVTS_HOOK_ERRORS=test-results-serial-hook-errors.json stage serial-tests npx vitest run \
  --passWithNoTests --no-file-parallelism --reporter=default $hooks --reporter=json --outputFile.json=test-results-serial.json
serial_rc=$rc
# With each run's exit status, so a run that failed outside any test is counted too.
node scripts/print-test-summary.mjs "test-results.json:$tests_rc" "test-results-serial.json:$serial_rc" ||
  failed+=("test-summary")

if [ "${#failed[@]}" -gt 0 ]; then
  echo "FAILED stages: ${failed[*]}"
  exit 1
fi
