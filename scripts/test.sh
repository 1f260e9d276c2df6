#!/usr/bin/env bash
# Builds RangeFS and runs the whole test suite (unit tests and the integration
# tests, which mount real manifests against a local nginx), then, when given no
# arguments, the install test: the Debian package installed into a fresh Debian 12
# root (scripts/test-install.sh; it says why it skips where it cannot run).
# Usage: scripts/test.sh [extra `swift test` arguments, e.g. --filter RangeFSIntegrationTests]
# The exit code is the test result.
set -euo pipefail

cd "$(dirname "$0")/.."

scripts/install-deps.sh

echo "== swift build"
swift build

# The integration tests look for the binary here unless RANGEFS_BIN says otherwise.
export RANGEFS_BIN="${RANGEFS_BIN:-$PWD/.build/debug/rangefs}"

echo "== swift test"
swift test "$@"

if [ "$#" -eq 0 ]; then
    echo "== install test"
    scripts/test-install.sh
fi
