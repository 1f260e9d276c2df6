#!/usr/bin/env bash
# Builds the release packages of RangeFS into dist/:
#   rangefs_VERSION_amd64.deb             for Debian 12 and later (apt install ./rangefs_….deb)
#   rangefs-VERSION-linux-x86_64.tar.gz   the same binary, man page and completions in a
#                                         /usr/local-style tree (bin/, share/)
# The binary carries the Swift runtime (--static-swift-stdlib), so neither needs Swift on the
# machine; it uses the system's libfuse3, libcurl, SQLite and libc, which the .deb depends on
# as dpkg-shlibdeps finds them. The version is RangeFSVersion.current in
# Sources/RangeFSCore/Support/Version.swift; packaging/changelog must have an entry for it.
# `rangefs --version` adds the commit this script built from.
#
# Usage: scripts/package.sh        (builds in .build-release/; needs dpkg-dev and binutils,
#                                   and checks the .deb with lintian when it is installed)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

fail() { echo "package: $*" >&2; exit 1; }
say() { echo "package: $*" >&2; }

[ "$(uname -m)" = x86_64 ] || fail "builds amd64 packages only; this machine is $(uname -m)"
for tool in swift dpkg-deb dpkg-shlibdeps strip gzip; do
    command -v "$tool" >/dev/null 2>&1 || fail "$tool is missing (scripts/install-deps.sh installs it)"
done

scratch=".build-release"
dist="dist"
version="$(sed -n 's/^ *public static let current = "\([^"]*\)".*/\1/p' Sources/RangeFSCore/Support/Version.swift)"
[ -n "$version" ] || fail "no version found in Sources/RangeFSCore/Support/Version.swift"
changelog_version="$(sed -n '1s/^rangefs (\([^)]*\)).*/\1/p' packaging/changelog)"
[ "$changelog_version" = "$version" ] ||
    fail "packaging/changelog's newest entry is for $changelog_version, but the version is $version: add an entry"

# The commit, marked when tracked files differ from it; none outside a git checkout.
commit=""
if git rev-parse --verify -q HEAD >/dev/null 2>&1; then
    commit="$(git rev-parse --short=12 HEAD)"
    git diff --quiet HEAD -- 2>/dev/null || commit="$commit-modified"
fi
# File dates in both packages: the commit's time, so the same commit packs the same way.
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}"

# ------------------------------------------------------------------ build
stamp="Sources/rangefs/BuildStamp.generated.swift"
trap 'rm -f "$stamp"' EXIT
if [ -n "$commit" ]; then commit_literal="\"$commit\""; else commit_literal="nil"; fi
cat > "$stamp" <<EOF
// Written by scripts/package.sh for its build (see BuildCommit.swift); not committed.
#if RANGEFS_BUILD_STAMP
enum BuildStamp { static let commit: String? = $commit_literal }
#endif
EOF

say "building rangefs $version (${commit:-no commit}) in release mode with the Swift runtime linked in"
# -z now: all symbols are bound at start, so the GOT can be read-only (Debian's hardening).
swift build -c release --static-swift-stdlib --scratch-path "$scratch" --product rangefs \
    -Xswiftc -DRANGEFS_BUILD_STAMP -Xlinker -z -Xlinker now
built="$scratch/release/rangefs"
[ -x "$built" ] || fail "the build left no $built"

# ------------------------------------------------------------------ the tree both packages share
stage="$root/$scratch/package"
rm -rf "$stage"
tree="$stage/tree"      # laid out as under /usr
mkdir -p "$tree/bin"
strip --remove-section=.comment --remove-section=.note -o "$tree/bin/rangefs" "$built"
chmod 0755 "$tree/bin/rangefs"
if ldd "$tree/bin/rangefs" | grep -q 'libswift\|not found'; then
    fail "the binary still needs the Swift runtime or a missing library: $(ldd "$tree/bin/rangefs")"
fi

install -d "$tree/share/man/man1" "$tree/share/bash-completion/completions" \
    "$tree/share/zsh/vendor-completions" "$tree/share/fish/vendor_completions.d" \
    "$tree/share/doc/rangefs/examples/systemd"
gzip -9n < docs/man/rangefs.1 > "$tree/share/man/man1/rangefs.1.gz"
# bash sources its completions: the generated script's #!/bin/bash line is not needed there.
"$tree/bin/rangefs" --generate-completion-script bash | sed '1{/^#!/d}' > "$tree/share/bash-completion/completions/rangefs"
"$tree/bin/rangefs" --generate-completion-script zsh > "$tree/share/zsh/vendor-completions/_rangefs"
"$tree/bin/rangefs" --generate-completion-script fish > "$tree/share/fish/vendor_completions.d/rangefs.fish"

doc="$tree/share/doc/rangefs"
gzip -9n < README.md > "$doc/README.md.gz"
gzip -9n < packaging/changelog > "$doc/changelog.gz"
cp packaging/copyright "$doc/copyright"
cp examples/fstab.example examples/media.txt "$doc/examples/"
cp -r examples/formats "$doc/examples/"
# The mount and automount units are for one mount point, /mnt/media: examples to copy into
# /etc/systemd/system. The rangefs@.service template is installed where systemd looks (below).
cp examples/systemd/mnt-media.mount examples/systemd/mnt-media.automount "$doc/examples/systemd/"

# ------------------------------------------------------------------ .deb
deb_root="$stage/deb"
mkdir -p "$deb_root/DEBIAN" "$deb_root/lib/systemd/system"
cp -a "$tree" "$deb_root/usr"
cp examples/systemd/rangefs@.service "$deb_root/lib/systemd/system/"
install -D -m 0644 packaging/lintian-overrides "$deb_root/usr/share/lintian/overrides/rangefs"

# What the binary links: dpkg-shlibdeps reads it from the libraries' packages (it wants a
# debian/control beside it). fuse3 itself is needed too: mount.fuse3 runs rangefs for
# `mount -t fuse.rangefs`, and fusermount3 mounts for users who are not root; it comes from
# the same source as libfuse3-3, so it gets the same minimum version.
shlibs="$stage/shlibdeps"
mkdir -p "$shlibs/debian"
printf 'Source: rangefs\n\nPackage: rangefs\nArchitecture: amd64\n' > "$shlibs/debian/control"
lib_depends="$(cd "$shlibs" && dpkg-shlibdeps -O "$deb_root/usr/bin/rangefs" 2>"$stage/shlibdeps.log" |
    sed -n 's/^shlibs:Depends=//p')" || fail "dpkg-shlibdeps failed: $(cat "$stage/shlibdeps.log")"
[ -n "$lib_depends" ] || fail "dpkg-shlibdeps found no dependencies: $(cat "$stage/shlibdeps.log")"
fuse_version="$(printf '%s\n' "$lib_depends" | tr ',' '\n' | sed -n 's/^ *libfuse3-3 (\(>= [^)]*\)).*/\1/p')"
[ -n "$fuse_version" ] || fail "the binary does not link libfuse3: $lib_depends"
depends="fuse3 ($fuse_version), $lib_depends"

installed_size="$(du -s -k --apparent-size --exclude=DEBIAN "$deb_root" | cut -f1)"
sed -e "s/@VERSION@/$version/" -e "s/@DEPENDS@/$depends/" -e "s/@INSTALLED_SIZE@/$installed_size/" \
    packaging/control > "$deb_root/DEBIAN/control"
(cd "$deb_root" && find usr lib -type f -print0 | sort -z | xargs -0 md5sum) > "$deb_root/DEBIAN/md5sums"

# Modes as Debian wants them, dates from SOURCE_DATE_EPOCH.
find "$deb_root" -type d -exec chmod 0755 {} +
find "$deb_root" -type f -exec chmod 0644 {} +
chmod 0755 "$deb_root/usr/bin/rangefs"
find "$deb_root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

mkdir -p "$dist"
deb="$dist/rangefs_${version}_amd64.deb"
dpkg-deb --root-owner-group -Zxz --build "$deb_root" "$deb" >&2
say "wrote $deb ($(du -k "$deb" | cut -f1) KiB; Depends: $depends)"

# ------------------------------------------------------------------ tarball
name="rangefs-$version-linux-x86_64"
tar_root="$stage/$name"
cp -a "$tree" "$tar_root"
# Under /usr/local zsh looks in site-functions, not in Debian's vendor-completions.
mkdir -p "$tar_root/share/zsh/site-functions"
mv "$tar_root/share/zsh/vendor-completions/_rangefs" "$tar_root/share/zsh/site-functions/"
rmdir "$tar_root/share/zsh/vendor-completions"
cp examples/systemd/rangefs@.service "$tar_root/share/doc/rangefs/examples/systemd/"
tarball="$dist/$name.tar.gz"
tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" \
    -cf - "$name" | gzip -9n > "$tarball"
say "wrote $tarball ($(du -k "$tarball" | cut -f1) KiB)"

# ------------------------------------------------------------------ lintian
if command -v lintian >/dev/null 2>&1; then
    say "lintian $deb"
    lintian --fail-on error --display-info "$deb" >&2 || fail "lintian found errors in $deb"
    say "lintian: no errors"
else
    say "lintian is not installed: the .deb was not checked"
fi
