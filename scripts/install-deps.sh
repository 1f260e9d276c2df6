#!/usr/bin/env bash
# Installs what RangeFS needs to build, test and run its demo on Debian 12:
# libfuse3, libcurl and libssh2 headers, SQLite, nginx (the test and demo server), ffmpeg
# (makes and probes test audio), curl, attr (getfattr), mpg123, OpenSSH's server and
# ssh-keygen (the SFTP server the tests mount); Apache 2, lighttpd
# and Python 3 (whose directory listings the tests read); Go (builds the conformance
# test's checker, Go's testing/fstest over a mount); and for building
# and testing the Debian package: dpkg-dev (dpkg-shlibdeps), binutils (strip),
# lintian and debootstrap. Then, with pip, for the python3 on PATH: boto3 (botocore
# is the reference the request signer is tested against), moto's S3 server, and WsgiDAV
# (a WebDAV server the tests mount).
# Idempotent and non-interactive; uses sudo only when not root. Swift itself is
# expected on PATH already.
set -euo pipefail

packages=(
    fuse3 libfuse3-dev
    libcurl4-openssl-dev
    libssh2-1-dev
    libsqlite3-dev
    pkg-config
    nginx-light
    apache2 lighttpd python3 python3-pip
    golang-go
    ffmpeg
    curl
    attr
    mpg123
    openssh-server openssh-client
    ca-certificates
    dpkg-dev binutils lintian debootstrap
)

if [ "$(id -u)" -eq 0 ]; then
    SUDO=()
else
    if ! command -v sudo >/dev/null 2>&1; then
        echo "install-deps: not root and no sudo; install as root: ${packages[*]}" >&2
        exit 1
    fi
    SUDO=(sudo -n)
fi

missing=()
for pkg in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$pkg")
    fi
done
# nginx-light or any other nginx flavour will do.
if [ -x /usr/sbin/nginx ]; then
    missing=("${missing[@]/nginx-light/}")
fi
# Drop empty slots left by the substitution above.
wanted=()
for pkg in "${missing[@]}"; do [ -n "$pkg" ] && wanted+=("$pkg"); done

if [ "${#wanted[@]}" -eq 0 ]; then
    echo "install-deps: everything is installed"
else
    echo "install-deps: installing ${wanted[*]}"
    export DEBIAN_FRONTEND=noninteractive
    "${SUDO[@]}" apt-get update -q
    # Keep a distro nginx package from starting a system server on port 80.
    policy_added=0
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' | "${SUDO[@]}" tee /usr/sbin/policy-rc.d >/dev/null
        "${SUDO[@]}" chmod 755 /usr/sbin/policy-rc.d
        policy_added=1
    fi
    status=0
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${wanted[@]}" || status=$?
    if [ "$policy_added" -eq 1 ]; then "${SUDO[@]}" rm -f /usr/sbin/policy-rc.d; fi
    [ "$status" -eq 0 ] || exit "$status"
    # The tests start these servers themselves on loopback ports: the system services they
    # come with stay off, or they would listen on port 80 from the next boot on. Only those
    # installed here: a server someone already runs is left as it is.
    for pkg in "${wanted[@]}"; do
        case "$pkg" in apache2) services=(apache2 apache-htcacheclean) ;; lighttpd) services=(lighttpd) ;; *) continue ;; esac
        for service in "${services[@]}"; do
            if command -v systemctl >/dev/null 2>&1 && [ -e "/lib/systemd/system/$service.service" ]; then
                "${SUDO[@]}" systemctl disable --quiet "$service" >/dev/null 2>&1 || true
            fi
            if command -v update-rc.d >/dev/null 2>&1 && [ -e "/etc/init.d/$service" ]; then
                "${SUDO[@]}" update-rc.d "$service" disable >/dev/null 2>&1 || true
            fi
        done
    done
fi

# For whichever python3 is on PATH: boto3 and moto[server] (the S3 tests), WsgiDAV and its
# server cheroot (the WebDAV tests), Supysonic and its server waitress (the Subsonic tests).
# Debian's own python3 takes pip packages only with --break-system-packages (PEP 668), and as root.
if python3 -c 'import boto3, moto.server, wsgidav, cheroot, supysonic, waitress' >/dev/null 2>&1 \
    && command -v supysonic-cli >/dev/null && command -v supysonic-server >/dev/null; then
    echo "install-deps: boto3, moto, WsgiDAV and Supysonic are installed"
else
    echo "install-deps: installing boto3, moto[server], wsgidav, cheroot, supysonic and waitress with pip"
    pip_install=(python3 -m pip install --quiet --disable-pip-version-check boto3 'moto[server]' wsgidav cheroot supysonic waitress)
    if [ "$(python3 -c 'import sys; print(sys.prefix)')" = /usr ]; then
        "${SUDO[@]}" "${pip_install[@]}" --break-system-packages
    else
        "${pip_install[@]}"
    fi
fi

# FUSE needs its device; say so plainly instead of failing later.
if [ ! -e /dev/fuse ]; then
    echo "install-deps: warning: /dev/fuse is missing; mounts (and the mount tests) cannot work here" >&2
fi
