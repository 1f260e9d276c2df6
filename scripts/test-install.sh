#!/usr/bin/env bash
# Tests the Debian package as a user gets it: builds it (scripts/package.sh), installs it with
# apt into a fresh Debian 12 root made by debootstrap (no Swift anywhere in it), and there runs
# `rangefs --version`, mounts a manifest served by nginx on the host's loopback with
# `rangefs mount` and with `mount -t fuse.rangefs`, reads a file byte-exact through each, shows
# `man rangefs` and completes `rangefs mo<TAB>` with bash-completion.
#
# Usage: scripts/test-install.sh [PACKAGE.deb]   (default: build one with scripts/package.sh)
# Needs root, debootstrap, /dev/fuse, nginx and the network to the Debian mirror apt uses;
# without them it says why and skips (exit 0). The minbase root is made once and kept in
# .build-install/; each run installs into a fresh copy of it. The exit code is the result.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

say() { echo "install test: $*" >&2; }
fail() { echo "install test: FAILED: $*" >&2; exit 1; }
skip() { echo "install test: SKIPPED: $*" >&2; exit 0; }

[ "$(id -u)" -eq 0 ] || skip "needs root (debootstrap, chroot and bind mounts)"
command -v debootstrap >/dev/null 2>&1 || skip "debootstrap is not installed (scripts/install-deps.sh installs it)"
[ -c /dev/fuse ] || skip "/dev/fuse is missing: nothing can be mounted here"
[ -x /usr/sbin/nginx ] || skip "nginx is not installed"

started=$SECONDS
cache=".build-install"
base="$cache/bookworm-minbase"     # the cached, untouched debootstrap root
sysroot="$cache/run"               # this run's copy, where the package is installed
mkdir -p "$cache"
cache="$(cd "$cache" && pwd)"; base="$cache/bookworm-minbase"; sysroot="$cache/run"

# Mount points under a directory, deepest first (so they can be unmounted in that order).
mounts_under() {
    awk -v dir="$1" '$2 == dir || index($2, dir "/") == 1 { print $2 }' /proc/self/mounts | sort -r
}
# Unmounts everything under the run's root; refuses to go on while anything stays mounted,
# because removing a tree with /dev bound into it would remove the host's /dev.
unmount_all() {
    local point
    for point in $(mounts_under "$sysroot"); do
        umount "$point" 2>/dev/null || umount -l "$point" 2>/dev/null || true
    done
    [ -z "$(mounts_under "$sysroot")" ]
}
remove_sysroot() {
    unmount_all || fail "still mounted under $sysroot: $(mounts_under "$sysroot" | tr '\n' ' ')"
    rm -rf --one-file-system "$sysroot"
}

nginx_pid=""
cleanup() {
    local status=$?
    [ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null
    if [ -d "$sysroot" ] && ! unmount_all; then
        echo "install test: could not unmount: $(mounts_under "$sysroot" | tr '\n' ' ')" >&2
        status=1
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Runs a command inside the installed system, with a time limit.
in_root() {
    local limit=$1; shift
    timeout "$limit" chroot "$sysroot" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LANG=C.UTF-8 TERM=dumb DEBIAN_FRONTEND=noninteractive "$@"
}

# ------------------------------------------------------------------ the package
deb="${1:-}"
if [ -z "$deb" ]; then
    say "building the package"
    package_started=$SECONDS
    scripts/package.sh
    say "package built in $((SECONDS - package_started)) s"
    version="$(sed -n '1s/^rangefs (\([^)]*\)).*/\1/p' packaging/changelog)"
    deb="dist/rangefs_${version}_amd64.deb"
fi
[ -f "$deb" ] || fail "no package at $deb"
version="$(dpkg-deb -f "$deb" Version)"
say "$deb: $(du -k "$deb" | cut -f1) KiB; Depends: $(dpkg-deb -f "$deb" Depends)"

# ------------------------------------------------------------------ a fresh Debian 12
if [ ! -d "$base" ]; then
    # The Debian mirror apt already uses here; deb.debian.org when apt names none.
    mirror="$(apt-get indextargets --format '$(REPO_URI) $(CODENAME) $(ORIGIN)' 'Created-By: Packages' 2>/dev/null |
        awk '$2 == "bookworm" && $3 == "Debian" { print $1; exit }')"
    mirror="${mirror:-http://deb.debian.org/debian/}"
    say "making a minbase Debian 12 root from $mirror (once; kept in $base)"
    rm -rf --one-file-system "$base.partial"
    timeout 1200 debootstrap --variant=minbase bookworm "$base.partial" "$mirror" > "$cache/debootstrap.log" 2>&1 ||
        fail "debootstrap failed; see $cache/debootstrap.log: $(tail -3 "$cache/debootstrap.log")"
    mv "$base.partial" "$base"
fi
[ ! -d "$sysroot" ] || remove_sysroot
cp -a "$base" "$sysroot"
mount --bind /dev "$sysroot/dev"
mount --bind /proc "$sysroot/proc"
cp /etc/resolv.conf "$sysroot/etc/resolv.conf"

! in_root 10 sh -c 'command -v swift' >/dev/null || fail "the fresh root has swift on PATH"

# ------------------------------------------------------------------ apt install ./rangefs_….deb
cp "$deb" "$sysroot/tmp/"
# With what a usual Debian has besides minbase and the test uses: man, bash completion, systemd.
say "apt-get install ./$(basename "$deb") man-db bash-completion systemd, in the fresh root"
in_root 300 apt-get update -q > "$cache/apt.log" 2>&1 || fail "apt-get update: $(tail -5 "$cache/apt.log")"
in_root 600 apt-get install -y -q "/tmp/$(basename "$deb")" man-db bash-completion systemd >> "$cache/apt.log" 2>&1 ||
    fail "apt-get install: $(tail -15 "$cache/apt.log")"
grep -E '^(Setting up rangefs|[0-9]+ upgraded)' "$cache/apt.log" >&2 || true

[ -z "$(find "$sysroot" -xdev -name 'libswiftCore*' -print -quit)" ] || fail "a Swift runtime library is in the root"
missing="$(in_root 30 ldd /usr/bin/rangefs | grep 'not found' || true)"
[ -z "$missing" ] || fail "rangefs needs libraries the package does not pull in: $missing"

# ------------------------------------------------------------------ rangefs --version
expected_commit="$(git rev-parse --short=12 HEAD 2>/dev/null || true)"
printed="$(in_root 30 rangefs --version)" || fail "rangefs --version failed: $printed"
say "rangefs --version: $printed"
case "$printed" in
    "$version (commit $expected_commit"*) ;;
    *) fail "expected '$version (commit $expected_commit…)', got '$printed'" ;;
esac

# ------------------------------------------------------------------ nginx on the host's loopback
data="$cache/data"
rm -rf "$data"; mkdir -p "$data/www" "$data/nginx/tmp"
head -c 3000000 /dev/urandom > "$data/www/sample.bin"     # not a whole number of blocks
port=""
for candidate in $(shuf -i 20000-40000 -n 20); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$candidate") 2>/dev/null; then port=$candidate; break; fi
done
[ -n "$port" ] || fail "found no free port on 127.0.0.1"
cat > "$data/nginx/nginx.conf" <<CONF
daemon off;
worker_processes 1;
user root;
pid $data/nginx/nginx.pid;
error_log $data/nginx/error.log;
events { worker_connections 64; }
http {
    access_log $data/nginx/access.log;
    client_body_temp_path $data/nginx/tmp/body;
    proxy_temp_path $data/nginx/tmp/proxy;
    fastcgi_temp_path $data/nginx/tmp/fastcgi;
    uwsgi_temp_path $data/nginx/tmp/uwsgi;
    scgi_temp_path $data/nginx/tmp/scgi;
    server { listen 127.0.0.1:$port; root $data/www; }
}
CONF
/usr/sbin/nginx -c "$data/nginx/nginx.conf" -p "$data/nginx/" -e "$data/nginx/error.log" &
nginx_pid=$!
deadline=$((SECONDS + 10))
until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
    kill -0 "$nginx_pid" 2>/dev/null || fail "nginx exited: $(cat "$data/nginx/error.log")"
    [ "$SECONDS" -lt "$deadline" ] || fail "nginx did not listen on 127.0.0.1:$port within 10 s"
    sleep 0.1
done

mkdir -p "$sysroot/etc/rangefs" "$sysroot/mnt/media" "$sysroot/mnt/fstab"
printf 'sample.bin\thttp://127.0.0.1:%s/sample.bin\n' "$port" > "$sysroot/etc/rangefs/media.txt"

is_mounted() { [ -n "$(awk -v p="$sysroot$1" '$2 == p' /proc/self/mounts)" ]; }
# Reads the file through the mount inside the root and compares it with the original.
check_read() {
    in_root 120 cat "$1/sample.bin" | cmp - "$data/www/sample.bin" ||
        fail "$1/sample.bin differs from the served file"
}

# ------------------------------------------------------------------ rangefs mount
in_root 60 rangefs mount /etc/rangefs/media.txt /mnt/media --cache-dir /var/cache/rangefs/media ||
    fail "rangefs mount failed"
is_mounted /mnt/media || fail "rangefs mount returned but /mnt/media is not mounted"
check_read /mnt/media
say "rangefs mount: /mnt/media/sample.bin read byte-exact ($(stat -c %s "$data/www/sample.bin") bytes)"
in_root 60 rangefs unmount /mnt/media || fail "rangefs unmount failed"
! is_mounted /mnt/media || fail "/mnt/media is still mounted after rangefs unmount"

# ------------------------------------------------------------------ mount -t fuse.rangefs (as fstab does)
in_root 60 mount -t fuse.rangefs -o cache_dir=/var/cache/rangefs/fstab,prefetch=opened,_netdev \
    /etc/rangefs/media.txt /mnt/fstab || fail "mount -t fuse.rangefs failed"
is_mounted /mnt/fstab || fail "mount -t fuse.rangefs returned but /mnt/fstab is not mounted"
check_read /mnt/fstab
say "mount -t fuse.rangefs: /mnt/fstab/sample.bin read byte-exact"
in_root 60 umount /mnt/fstab || fail "umount /mnt/fstab failed"
! is_mounted /mnt/fstab || fail "/mnt/fstab is still mounted after umount"

# ------------------------------------------------------------------ man rangefs
page="$(in_root 60 env MANPAGER=cat MANWIDTH=80 man rangefs 2>&1)" || fail "man rangefs failed: $page"
grep -q 'Mount web directories, WebDAV servers, SSH servers (SFTP)' <<<"$page" || fail "man rangefs shows no RangeFS page: $page"
say "man rangefs: $(grep -m1 -A1 '^NAME' <<<"$page" | tail -1 | sed 's/^ *//')"

# ------------------------------------------------------------------ rangefs mo<TAB>
# What bash-completion does on TAB: load the completion for the command, call its function
# with the words of the line, and offer what it puts in COMPREPLY.
completion="$(in_root 30 bash -c '
    . /usr/share/bash-completion/bash_completion
    _completion_loader rangefs
    spec="$(complete -p rangefs)" || exit 1
    function="${spec##* -F }"; function="${function%% *}"
    COMP_LINE="rangefs mo"; COMP_POINT=${#COMP_LINE}; COMP_WORDS=(rangefs mo); COMP_CWORD=1
    "$function" rangefs mo rangefs
    printf "%s\n" "${COMPREPLY[@]}"' 2>&1)" || fail "bash completion of rangefs failed: $completion"
[ "$completion" = "mount" ] || fail "rangefs mo<TAB> offered '$completion', expected 'mount'"
say "bash: rangefs mo<TAB> -> $completion"

# ------------------------------------------------------------------ systemd units
# The template as installed, and the example units copied where their comments say; systemd
# checks their syntax, that their commands exist and that their man page does.
cp "$sysroot/usr/share/doc/rangefs/examples/systemd/"mnt-media.* "$sysroot/etc/systemd/system/"
verified="$(in_root 60 systemd-analyze verify rangefs@media.service mnt-media.mount mnt-media.automount 2>&1)" ||
    fail "systemd-analyze verify: $verified"
[ -z "$verified" ] || fail "systemd-analyze verify warns: $verified"
say "systemd-analyze verify rangefs@media.service mnt-media.mount mnt-media.automount: no complaints"

remove_sysroot
say "passed in $((SECONDS - started)) s"
