#!/usr/bin/env bash
# Builds the libFuzzer harnesses and runs each for SECONDS (default 60).
#
#   fuzz/run.sh [SECONDS] [HARNESS...]      e.g. fuzz/run.sh 30, fuzz/run.sh 300 ManifestFuzzer
#
# Each harness in fuzz/<Name>/main.swift is compiled with
# `swiftc -sanitize=fuzzer,address -parse-as-library` into one module together with the
# RangeFSCore sources it exercises (so internal parsers are reachable); Yams, which the
# YAML manifest parser needs, is built once with SwiftPM and linked in uninstrumented.
# The corpus lives in fuzz/corpus/<Name>/ (a small seed set is committed; new inputs found
# during a run go to .build-fuzz/corpus/<Name>/ so the tree stays clean). Crashes are
# written to fuzz/crashes/<Name>/; turn each into a case of
# Tests/RangeFSCoreTests/FuzzRegressionTests.swift. Exit status: non-zero if any harness
# found a crash.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
SECONDS_EACH=${1:-60}
shift || true
HARNESSES=("$@")
if [ ${#HARNESSES[@]} -eq 0 ]; then HARNESSES=(ManifestFuzzer HeaderFuzzer); fi

SCRATCH=${FUZZ_SCRATCH:-$ROOT/.build-fuzz}
BIN=$SCRATCH/bin
mkdir -p "$BIN"
CORE=$ROOT/Sources/RangeFSCore

sources_for() {
    case "$1" in
        ManifestFuzzer)
            # The parsers, not the code that downloads a manifest (it needs the HTTP client).
            grep -L -e RemoteClient -e RemoteError "$CORE"/Manifest/*.swift
            echo "$CORE/Remote/ContentRange.swift"
            # Headers given with a manifest's URL stay on its origin.
            echo "$CORE/Remote/URL+Origin.swift"
            echo "$CORE/Support/ByteSize.swift"
            # Compact storage the manifest's entries and clash check are built on.
            echo "$CORE/Support/PositionTable.swift"
            echo "$CORE/Support/String+SameBytes.swift"
            # Piece digests print as hex; piece counts round up.
            echo "$CORE/Support/HexDigits.swift"
            echo "$CORE/Support/SizeArithmetic.swift"
            # S3 listing replies and error documents (not the signer, which needs swift-crypto).
            for file in BucketListingPage BucketDirectory S3ErrorReply S3FailureExplanation; do
                echo "$CORE/S3/$file.swift"
            done
            # WebDAV multistatus replies, read into entries as web listings are.
            printf "%s\n" "$CORE"/WebListing/*.swift
            echo "$CORE/WebDAV/WebDAVListing.swift"
            echo "$CORE/Support/PercentEncoding.swift"
            ;;
        HeaderFuzzer)
            echo "$CORE/Remote/ContentRange.swift"
            echo "$CORE/Support/ByteSize.swift"
            ;;
        *) echo "unknown harness $1" >&2; return 1 ;;
    esac
}

needs_yams() { [ "$1" = ManifestFuzzer ]; }

if printf '%s\n' "${HARNESSES[@]}" | grep -qx ManifestFuzzer; then
    echo "== building Yams (for the YAML manifest parser)"
    swift build --package-path "$ROOT" --scratch-path "$SCRATCH" --target Yams >/dev/null
fi
MODULES=$SCRATCH/debug/Modules

status=0
for name in "${HARNESSES[@]}"; do
    echo "== building $name"
    mapfile -t sources < <(sources_for "$name")
    extra=()
    if needs_yams "$name"; then
        extra=(-I "$MODULES" -Xcc -fmodule-map-file="$SCRATCH/checkouts/Yams/Sources/CYaml/include/module.modulemap" \
                -I "$SCRATCH/checkouts/Yams/Sources/CYaml/include" "$SCRATCH"/debug/Yams.build/*.swift.o "$SCRATCH"/debug/CYaml.build/src/*.o)
    fi
    swiftc -sanitize=fuzzer,address -parse-as-library -O -g -module-name RangeFSFuzz \
        -suppress-warnings -use-ld=lld \
        "$ROOT/fuzz/$name/main.swift" "${sources[@]}" "${extra[@]}" -o "$BIN/$name"

    seeds=$ROOT/fuzz/corpus/$name
    work=$SCRATCH/corpus/$name
    crashes=$ROOT/fuzz/crashes/$name
    mkdir -p "$seeds" "$work" "$crashes"
    echo "== running $name for $SECONDS_EACH s"
    # -rss_limit_mb and -timeout catch runaway memory and hangs as findings too. Leak checks are
    # off: FoundationXML leaks a few CFStrings per XML parse error, which is not ours to fix.
    if ! ASAN_OPTIONS=detect_leaks=0 "$BIN/$name" "$work" "$seeds" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -detect_leaks=0 \
            -max_len=4096 -artifact_prefix="$crashes/" -print_final_stats=1 2>"$SCRATCH/$name.log"; then
        status=1
        echo "!! $name found a problem; see $SCRATCH/$name.log and $crashes/"
    fi
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb|cov:|Done " "$SCRATCH/$name.log" | tail -4 || true
done
exit $status
