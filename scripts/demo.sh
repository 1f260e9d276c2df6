#!/usr/bin/env bash
# RangeFS demo: serves generated media with a local nginx on 127.0.0.1:8089, mounts
# examples/media.txt, and uses the mount with ordinary tools (ls, ffprobe, mpg123,
# cp, sha256sum) while showing what was fetched from the server.
#
# Usage: scripts/demo.sh [MOUNTPOINT]      (default: a new temporary directory)
# Exits non-zero if anything is wrong. Unmounts and stops nginx on exit.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
PORT=8089
MANIFEST=$ROOT/examples/media.txt
MEDIA=$ROOT/examples/media            # generated, not committed
BIG_MIB=64

say() { printf '\n== %s\n' "$*"; }
fail() { printf 'demo: FAILED: %s\n' "$*" >&2; exit 1; }

scripts/install-deps.sh

say "Building rangefs (release)"
swift build -c release
RANGEFS="$(swift build -c release --show-bin-path)/rangefs"
[ -x "$RANGEFS" ] || fail "no binary at $RANGEFS"
"$RANGEFS" --version

# ---------------------------------------------------------------- media
say "Generating example media in examples/media/ (once)"
mkdir -p "$MEDIA/podcast"
make_episode() {   # file, tone in Hz, seconds, title
    [ -s "$1" ] && return 0
    ffmpeg -hide_banner -loglevel error -nostdin -y \
        -f lavfi -i "sine=frequency=$2:sample_rate=44100:duration=$3" \
        -ac 2 -c:a libmp3lame -b:a 192k \
        -metadata title="$4" -metadata artist="RangeFS demo" "$1.tmp.mp3"
    mv "$1.tmp.mp3" "$1"
}
make_episode "$MEDIA/podcast/episode-01.mp3" 440 240 "Episode 1: a tone"
make_episode "$MEDIA/podcast/episode-02.mp3" 660 180 "Episode 2: another tone"
if [ "$(stat -c %s "$MEDIA/big.bin" 2>/dev/null || echo 0)" != "$((BIG_MIB * 1048576))" ]; then
    head -c "$((BIG_MIB * 1048576))" /dev/urandom > "$MEDIA/big.bin.tmp"
    mv "$MEDIA/big.bin.tmp" "$MEDIA/big.bin"
fi
# A file whose bytes are always the same, so examples/formats/collection.meta4 can give its
# sha-256 and piece hashes; and the whole folder again under /mirror/, the sample's second source.
if [ ! -s "$MEDIA/pattern.bin" ]; then
    { yes 'RangeFS Metalink sample' || true; } | head -c 1000000 > "$MEDIA/pattern.bin.tmp"   # yes ends on SIGPIPE
    mv "$MEDIA/pattern.bin.tmp" "$MEDIA/pattern.bin"
fi
ln -sfn . "$MEDIA/mirror"
chmod -R a+rX "$MEDIA"
ls -la "$MEDIA" "$MEDIA/podcast"

# ---------------------------------------------------------------- clean-up
WORK=$(mktemp -d "${TMPDIR:-/tmp}/rangefs-demo.XXXXXX")
chmod 755 "$WORK"
MNT=$(realpath -m "${1:-$WORK/mnt}")
CACHE=$WORK/cache
NGINX_PID=
MOUNTED=0

cleanup() {
    local status=$?
    set +e
    if [ "$MOUNTED" -eq 1 ]; then
        timeout 60 "$RANGEFS" unmount "$MNT" >/dev/null 2>&1
        if grep -q " $MNT " /proc/self/mountinfo; then fusermount3 -u -z "$MNT" 2>/dev/null; fi
    fi
    if [ -n "$NGINX_PID" ] && kill -0 "$NGINX_PID" 2>/dev/null; then
        kill -TERM "$NGINX_PID"
        for _ in $(seq 50); do kill -0 "$NGINX_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$NGINX_PID" 2>/dev/null
    fi
    rm -rf "$WORK"
    if [ "$status" -eq 0 ]; then echo; echo "demo: OK"; fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- nginx
say "Starting nginx on 127.0.0.1:$PORT serving examples/media/"
if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
    fail "something already listens on 127.0.0.1:$PORT (the manifest points there)"
fi
mkdir -p "$WORK/nginx/tmp"
USER_LINE=""
[ "$(id -u)" -eq 0 ] && USER_LINE="user root;"
cat > "$WORK/nginx/nginx.conf" <<CONF
daemon off;
worker_processes 1;
$USER_LINE
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log;
events { worker_connections 256; }
http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    log_format demo '\$request_method\t\$uri\t\$http_range\t\$status\t\$body_bytes_sent';
    access_log $WORK/nginx/access.log demo;
    client_body_temp_path $WORK/nginx/tmp/body;
    proxy_temp_path $WORK/nginx/tmp/proxy;
    fastcgi_temp_path $WORK/nginx/tmp/fastcgi;
    uwsgi_temp_path $WORK/nginx/tmp/uwsgi;
    scgi_temp_path $WORK/nginx/tmp/scgi;
    server {
        listen 127.0.0.1:$PORT;
        root $MEDIA;
        autoindex on;
    }
}
CONF
/usr/sbin/nginx -c "$WORK/nginx/nginx.conf" -p "$WORK/nginx/" -e "$WORK/nginx/error.log" &
NGINX_PID=$!
for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
    kill -0 "$NGINX_PID" 2>/dev/null || fail "nginx exited: $(cat "$WORK/nginx/error.log")"
    sleep 0.1
done
(exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null || fail "nginx did not come up on port $PORT"
LOG=$WORK/nginx/access.log

# Bytes nginx sent for one URI path, and how many requests it took.
served() { awk -F'\t' -v u="$1" '$2 == u { n++; b += $5 } END { printf "%d request(s), %d bytes", n, b }' "$LOG"; }

# ---------------------------------------------------------------- mount
say "Mounting examples/media.txt at $MNT"
# --prefetch none: nothing is fetched in the background, so what the server sent
# below is exactly what each program's reads needed. (The default, --prefetch all,
# would also complete every file in the background.)
mkdir -p "$MNT" "$CACHE"
"$RANGEFS" mount "$MANIFEST" "$MNT" --cache-dir "$CACHE" --prefetch none
MOUNTED=1
grep -q " $MNT " /proc/self/mountinfo || fail "$MNT is not mounted"

say "ls -laR $MNT"
ls -laR "$MNT"

EP1=$MNT/podcast/episode-01.mp3
EP2=$MNT/podcast/episode-02.mp3
SIZE1=$(stat -c %s "$MEDIA/podcast/episode-01.mp3")
[ "$(stat -c %s "$EP1")" = "$SIZE1" ] || fail "episode-01.mp3 has the wrong size in the mount"

say "ffprobe podcast/episode-01.mp3 (through the mount)"
timeout 120 ffprobe -v error -show_entries format=duration,bit_rate:format_tags=title \
    -of default=noprint_wrappers=1 "$EP1" || fail "ffprobe failed"
sleep 0.3
echo "fetched so far for episode-01.mp3 ($SIZE1 bytes): $(served /podcast/episode-01.mp3)"

say "mpg123 decodes 2 s of episode-02.mp3 from 60 s in (test mode: no sound device needed)"
# 38.28 frames per second at 44.1 kHz: skip 2297 frames, decode 77. RangeFS reads
# ahead while a reader stays sequential, so a player may pull in more than it decodes.
timeout 120 mpg123 -q -t -k 2297 -n 77 "$EP2" || fail "mpg123 failed"
sleep 0.3
echo "fetched so far for episode-02.mp3 ($(stat -c %s "$MEDIA/podcast/episode-02.mp3") bytes): $(served /podcast/episode-02.mp3)"

say "cp big.bin out of the mount and compare with the original"
OUT=$WORK/big.copy
start=$(date +%s.%N)
timeout 600 cp "$MNT/big.bin" "$OUT" || fail "cp big.bin failed"
end=$(date +%s.%N)
want=$(sha256sum < "$MEDIA/big.bin" | cut -d' ' -f1)
got=$(sha256sum < "$OUT" | cut -d' ' -f1)
echo "original: $want"
echo "copy:     $got"
[ "$want" = "$got" ] || fail "big.bin copied through the mount differs from the original"
awk -v s="$start" -v e="$end" -v m="$BIG_MIB" 'BEGIN { printf "%d MiB in %.2f s\n", m, e - s }'
sleep 0.3
echo "fetched for big.bin: $(served /big.bin)"

say "Reading big.bin again: served from the local cache"
before=$(wc -l < "$LOG")
timeout 120 sha256sum "$MNT/big.bin" >/dev/null || fail "second read failed"
sleep 0.3
echo "new requests to the server: $(( $(wc -l < "$LOG") - before ))"

say "Unmounting"
timeout 60 "$RANGEFS" unmount "$MNT" || fail "rangefs unmount failed"
MOUNTED=0
echo "cache left in $CACHE: $(du -sh "$CACHE" | cut -f1) (removed with the demo's temp dir)"

# ---------------------------------------------------------------- web directory
say "Mounting the web directory http://127.0.0.1:$PORT/ (nginx's autoindex) at $MNT: no manifest"
before=$(wc -l < "$LOG")
"$RANGEFS" mount "http://127.0.0.1:$PORT/" "$MNT" --cache-dir "$WORK/cache-web" --prefetch none
MOUNTED=1
ls -la "$MNT" "$MNT/podcast"
[ "$(stat -c %s "$MNT/podcast/episode-01.mp3")" = "$SIZE1" ] || fail "episode-01.mp3 has the wrong size in the web directory mount"
want=$(sha256sum < "$MEDIA/podcast/episode-02.mp3" | cut -d' ' -f1)
got=$(timeout 120 sha256sum < "$MNT/podcast/episode-02.mp3" | cut -d' ' -f1)
[ "$want" = "$got" ] || fail "episode-02.mp3 read through the web directory mount differs from the original"
echo "episode-02.mp3 matches the original (sha256 $got)"
sleep 0.3
echo "requests for all of this: $(( $(wc -l < "$LOG") - before )) (the listings of / and podcast/, then the file read)"
timeout 60 "$RANGEFS" unmount "$MNT" || fail "rangefs unmount of the web directory failed"
MOUNTED=0

say "rangefs manifest: the same tree written out as a manifest, to freeze or edit"
timeout 60 "$RANGEFS" manifest "http://127.0.0.1:$PORT/podcast/" || fail "rangefs manifest failed"
