#!/usr/bin/env bash
# RangeFS benchmark suite, one command: installs what it needs (apt), builds rangefs in
# release mode, generates its data once into bench/data/ (gitignored), serves it with its
# own nginx on 127.0.0.1 (and an S3 bucket on moto's server for the bucket rows, three more
# nginx as mirrors for the mirror rows), each server also over https (TLS and HTTP/2 with a
# throwaway CA made for the run: the -tls links), measures RangeFS against curl, the local disk, the AWS
# CLI and boto3, aria2c, rclone and httpdirfs, prints a table and rewrites docs/benchmarks.md
# and docs/benchmarks.png. The webdav group mounts its own Apache mod_dav (beside davfs2 and
# rclone's webdav remote), the subsonic group its own Supysonic (beside httpdirfs's sonic mode),
# each behind the slow link's latency and pacing, and an nginx TLS front as its https twin; the
# sftp group its own OpenSSH sshd (beside sshfs and rclone's sftp remote) on the slow link alone:
#   bench/run.sh --only webdav,sftp,subsonic --links slow,slow-tls
#
# Usage: bench/run.sh [--repeats N] [--only GROUPS] [--links plain,slow,plain-tls,slow-tls] [--skip-others] [--no-docs]
#        [--rangefs-prefetch all|opened|none]
#        (see bench/bench.py --help).  RANGEFS_BIN=/path/to/rangefs skips the build.
# Needs /dev/fuse, and root (or passwordless sudo) for apt and for dropping the page cache.
# Every row runs twice, one group at a time: each group with RangeFS's defaults (beside the other
# tools), then at once the same group with RangeFS alone and --prefetch none, so that the two are
# measured minutes apart. About 80 minutes on 2 cores over http (15 of them the library rows, whose rclone
# and httpdirfs scans fetch the whole library), and as much again for the https twins (the -tls links).
# Everything it mounts or starts is stopped on exit.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
WORK=$ROOT/bench/data/work

if [ "$(id -u)" -eq 0 ]; then SUDO=(); else SUDO=(sudo -n); fi

# ------------------------------------------------------------------ clean-up on any exit
cleanup() {
    local status=$?
    set +e
    # bench.py unmounts and stops its servers itself; this is the fallback if it was killed.
    if [ -r /proc/self/mountinfo ]; then
        awk -v w="$WORK/" 'index($5, w) == 1 { print $5 }' /proc/self/mountinfo | while read -r mnt; do
            timeout 30 fusermount3 -u -z "$mnt" 2>/dev/null
        done
    fi
    if [ -f "$WORK/servers.pid" ]; then
        while read -r pid; do
            [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && kill -TERM "$pid" 2>/dev/null
        done < "$WORK/servers.pid"
        rm -f "$WORK/servers.pid"
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# ------------------------------------------------------------------ packages
# The project's own dependencies, among them boto3 and moto[server] (pip, for the python3 on
# PATH): the bucket rows' S3 server and client, which bench.py runs with that python3.
scripts/install-deps.sh
# python3-mutagen: mutagen-inspect, the tag reader of the library rows. davfs2: the WebDAV rows'
# kernel-mounted client; sshfs: the SFTP rows' (Apache, Supysonic and openssh-server, their
# servers, come with scripts/install-deps.sh, as does ssh-keygen, which makes the run's keys).
bench_packages=(fio sox rclone httpdirfs awscli aria2 python3-mutagen python3-matplotlib openssl coreutils davfs2 sshfs)
missing=()
for pkg in "${bench_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "bench: installing ${missing[*]}"
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
    for pkg in "${missing[@]}"; do
        # One at a time: a package this Debian lacks (rclone, httpdirfs, davfs2, sshfs) only costs its column
        # (without awscli the bucket read's baseline is boto3's download_file).
        "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$pkg" \
            || echo "bench: could not install $pkg; its rows will say n/a" >&2
    done
fi

# ------------------------------------------------------------------ build
if [ -n "${RANGEFS_BIN:-}" ]; then
    RANGEFS=$RANGEFS_BIN
else
    echo "bench: building rangefs (release)"
    timeout 1800 swift build -c release --scratch-path .build-bench --product rangefs
    RANGEFS="$(swift build -c release --scratch-path .build-bench --show-bin-path)/rangefs"
fi
[ -x "$RANGEFS" ] || { echo "bench: no rangefs binary at $RANGEFS" >&2; exit 1; }

# ------------------------------------------------------------------ run
# Debian's python3 (matplotlib comes from apt), not whatever python3 is first on PATH.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
mkdir -p "$WORK"
timeout --foreground --signal=TERM --kill-after=60 14400 "$PY" bench/bench.py --rangefs "$RANGEFS" "$@"
