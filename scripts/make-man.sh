#!/usr/bin/env bash
# Regenerates docs/man/rangefs.1 from the command's own help texts.
#
# swift-argument-parser's generate-manual plugin writes an mdoc page from every
# subcommand's abstract, discussion and options; this script then turns its
# blank lines into paragraphs and the indented example lines into literal
# blocks, and adds the hand-written sections in docs/man/sections.mdoc (before
# EXIT STATUS) and docs/man/see-also.mdoc (before AUTHORS). Check the result
# with: man -l docs/man/rangefs.1
#
# Works offline once the package's dependencies are resolved. Builds in debug
# mode into the scratch path given by $SCRATCH_PATH (default: .build).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scratch="${SCRATCH_PATH:-.build}"
out="docs/man/rangefs.1"

# The page's date: the last change to the command line sources, so that
# regenerating an unchanged tree gives the same file.
date="$(git log -1 --format=%cs -- Sources/rangefs 2>/dev/null || true)"
[ -n "$date" ] || date="$(date -u +%Y-%m-%d)"

swift package --scratch-path "$scratch" plugin generate-manual \
    --configuration debug --date "$date" --authors "the RangeFS authors" >&2

generated="$scratch/plugins/GenerateManual/outputs/rangefs/rangefs.1"
[ -s "$generated" ] || { echo "make-man: $generated was not generated" >&2; exit 1; }

tmp="$(mktemp "${out}.XXXXXX")"
trap 'rm -f "$tmp"' EXIT
awk -v sections="docs/man/sections.mdoc" -v seealso="docs/man/see-also.mdoc" '
    function insert(file,   l) {
        while ((getline l < file) > 0) print l
        close(file)
    }
    { line[NR] = $0 }
    END {
        literal = 0
        for (i = 1; i <= NR; i++) {
            l = line[i]
            if (i == 1) {
                print l
                print ".\\\" Regenerate with scripts/make-man.sh from the help texts and docs/man/*.mdoc; do not edit."
                continue
            }
            # Indented lines of a discussion are examples: keep them as typed.
            if (l ~ /^  /) {
                if (!literal) { print ".Bd -literal -offset indent"; literal = 1 }
                sub(/^  /, "", l)
                if (l ~ /^[.\047]/) l = "\\&" l
                print l
                continue
            }
            if (literal) { print ".Ed"; literal = 0 }
            if (l == "") {
                next_line = line[i + 1]
                if (next_line != "" && next_line !~ /^\./ && next_line !~ /^  /) print ".Pp"
                continue
            }
            # A text line starting with a quote would be read as a roff request.
            if (l ~ /^\047/) l = "\\&" l
            if (l ~ /^\.Sh "?EXIT STATUS/) insert(sections)
            if (l ~ /^\.Sh "?AUTHORS/) insert(seealso)
            print l
        }
        if (literal) print ".Ed"
    }
' "$generated" > "$tmp"

# The page must render without warnings.
if command -v groff >/dev/null 2>&1; then
    warnings="$(groff -mandoc -ww -z "$tmp" 2>&1 || true)"
    if [ -n "$warnings" ]; then
        echo "make-man: groff warns about the generated page:" >&2
        echo "$warnings" >&2
        exit 1
    fi
fi
mv "$tmp" "$out"
trap - EXIT
echo "make-man: wrote $out" >&2
