"""The results for people: the table printed at the end (each https row beside its http twin,
with RangeFS's https ÷ http), the machine and tool versions, and docs/benchmarks.md (its
generated part; what is below KEPT_MARKER is kept)."""
import os
import time

from .config import (
    BUCKET, BUCKET_BIG_SIZE, BUCKET_WIDE, DOCS, MiB, PLAIN_PORT, PROXY_PORT, ROOT, S3_PORT, SLOW_PORT,
    STREAM_PORT, STREAM_PROXY_PORT, TLS_PORT_OFFSET, WEB_WIDE, project_relative
)
from .process import BenchError, run
from .servers import rate_text
from .results import (BACKGROUND_COST_LIMIT, NONE_KEY, OPTIONAL_TOOLS, OTHER_TOOLS, fmt, http_twin_id, https_ratio,
                      https_within_spread)
from .tls import base_link, is_tls


COLUMNS = ("rangefs", "baseline", "ratio", "target", "rclone", "httpdirfs")


def optional_tools(rows):
    return [tool for tool in OPTIONAL_TOOLS if any(tool in row.values for row in rows)]


def beside_twins(rows):
    """The rows in their order, each https row moved to just after its http twin (if measured)."""
    twins = {http_twin_id(row): row for row in rows if http_twin_id(row)}
    ids = {row.rid for row in rows}
    ordered = []
    for row in rows:
        if http_twin_id(row) in ids:
            continue        # placed after its twin
        ordered.append(row)
        if row.rid in twins:
            ordered.append(twins[row.rid])
    return ordered


def https_column(rows):
    """The https ÷ http column, when some https row has its http twin in the run."""
    ids = {row.rid for row in rows}
    return any(http_twin_id(row) in ids for row in rows)


def table_cells(row, by_id=None):
    cells = {}
    ratio = https_ratio(row, by_id or {})
    overlap = " ≈" if ratio is not None and https_within_spread(row, by_id or {}) else ""
    cells["https"] = f"{ratio:.2f}×{overlap}" if ratio is not None else ""
    for key in ("rangefs", NONE_KEY, "baseline") + OTHER_TOOLS:
        value = row.values.get(key)
        cells[key] = "n/a" if isinstance(value, str) else fmt(value)
    ratio = row.ratio()
    show = ratio is not None and row.baseline_label not in ("target", "exact ranges")
    cells["ratio"] = f"{ratio:.2f}×" if show else ""
    met = row.met()
    cells["target"] = (row.target_text + (" ✓" if met else " ✗" if met is False else "")) if row.target_text else ""
    cost = row.background_cost()
    noise = " ≈" if cost is not None and row.cost_within_spread() else ""
    cells["cost"] = "" if cost is None else f"{cost * 100:+.0f} %{noise}"
    return cells


def policy_columns(rows):
    """The --prefetch none column and the background's cost, when runs with --prefetch none measured them."""
    return any(NONE_KEY in row.values for row in rows)


def print_table(rows):
    rows = beside_twins(rows)
    by_id = {row.rid: row for row in rows}
    extra = optional_tools(rows)
    both = policy_columns(rows)
    https = https_column(rows)
    header = (["row", "unit", "RangeFS"] + (["none", "cost"] if both else []) + (["https÷http"] if https else [])
              + ["baseline", "ratio", "target", "rclone", "httpdirfs"] + extra)
    lines = [header]
    for row in rows:
        c = table_cells(row, by_id)
        lines.append([row.label, row.unit, c["rangefs"]] + ([c[NONE_KEY], c["cost"]] if both else [])
                     + ([c["https"]] if https else [])
                     + [c["baseline"], c["ratio"], c["target"], c["rclone"], c["httpdirfs"]]
                     + [c[tool] for tool in extra])
    widths = [max(len(l[i]) for l in lines) for i in range(len(header))]
    print()
    for i, line in enumerate(lines):
        print("  ".join(cell.ljust(widths[j]) if j < 2 else cell.rjust(widths[j]) for j, cell in enumerate(line)))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    print()
    for row in rows:
        for key, value in row.values.items():
            if isinstance(value, str):
                print(f"  {row.rid} [{key}]: {value}")


def tool_version(cmd, pattern=None):
    try:
        result = run(cmd, 20, check=False)
        text = (result.stdout + result.stderr).strip()
        line = text.splitlines()[0] if text else "?"
        return line.strip()
    except (BenchError, OSError):
        return "not installed"


def source_commit():
    """The checkout's commit, and whether its Sources differ from it: taken as a run starts, so a
    commit made while it runs is not put to the binary built before it."""
    commit = run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], 10, check=False).stdout.strip()
    dirty = run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no", "--", "Sources"], 10,
                check=False).stdout.strip()
    return f"commit {commit}{', Sources modified' if dirty else ''}"


def machine_info(ctx):
    mem = next(l for l in open("/proc/meminfo") if l.startswith("MemTotal")).split()[1]
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    return {
        "date": ctx.started_at,
        "cpus": f"{os.cpu_count()} × {cpu}",
        "memory": f"{int(mem) / 1024 / 1024:.1f} GiB",
        "kernel": os.uname().release,
        "load average (1/5/15 min) at the start": ctx.load_at_start,
        "load average (1/5/15 min) at the end": " ".join(open("/proc/loadavg").read().split()[:3]),
        "rangefs": tool_version([ctx.rangefs, "--version"]) + f" ({ctx.source_commit})",
        "nginx": tool_version(["/usr/sbin/nginx", "-v"]),
        "curl": tool_version(["curl", "--version"]),
        "rclone": tool_version(["rclone", "version"]),
        "httpdirfs": "httpdirfs " + (run(["dpkg-query", "-W", "-f=${Version}", "httpdirfs"], 10, check=False).stdout
                                     or "not installed"),
        "aria2c": tool_version(["aria2c", "--version"]),
        "fio": tool_version(["fio", "--version"]),
        "ffmpeg": tool_version(["ffmpeg", "-version"]),
        "sox": tool_version(["sox", "--version"]),
        "mpg123": tool_version(["mpg123", "--version"]),
        "libfuse": tool_version(["fusermount3", "--version"]),
        **(bucket_versions(ctx) if ctx.buckets else {}),
    }


def bucket_versions(ctx):
    python = next(iter(ctx.buckets.values()))["python"]
    modules = run([python, "-c", "import boto3, moto; print(f'moto {moto.__version__}, boto3 {boto3.__version__}')"],
                  60, check=False).stdout.strip() or "?"
    return {"moto, boto3": modules, "aws": tool_version(["aws", "--version"])}


def md_escape(text):
    return text.replace("|", "\\|")


def run_summary(parts):
    """The page's first lines: when its figures were measured, in one run or in parts."""
    checked = ("every whole-file read was checked against the original's sha256 (the timed pass reads to "
               "/dev/null, a pass right after hashes the same file through the same mount).")
    repeats = {part["repeats"] for part in parts}
    median = (f"Each figure is the median of {repeats.pop()} repeats unless the row says otherwise; " if len(repeats) == 1
              else "Each figure is the median of its part's repeats unless the row says otherwise; ")
    if len(parts) == 1:
        return [f"One run of `bench/run.sh` on {parts[0]['date']}, {parts[0]['minutes']:.1f} minutes. " + median + checked]
    total = sum(part["minutes"] for part in parts)
    lines = [f"A run of `bench/run.sh` in {len(parts)} parts, {total:.1f} minutes in all; each part measured its "
             "groups on its links, in place of the same rows of the parts before it. " + median + checked, ""]
    for part in parts:
        lines.append(f"- {part['date']}, {part['minutes']:.1f} minutes: {', '.join(part['groups'])} on "
                     f"{', '.join(part['links'])}; {part['repeats']} repeats"
                     + ("" if part["others"] else ", RangeFS and the baselines only")
                     + f"; rangefs {part['rangefs']}; load average at the start {part['load at the start']}.")
    return lines


def write_markdown(ctx, rows, info, parts):
    a = ctx.args
    out = ["# RangeFS benchmarks", "", *run_summary(parts), "",
           "## Setup", "",
           f"- **plain**: nginx on 127.0.0.1:{PLAIN_PORT} (loopback: no latency, ~1 GB/s; exposes per-request "
           "overhead).",
           f"- **slow**: nginx on 127.0.0.1:{SLOW_PORT} behind a TCP proxy on 127.0.0.1:{PROXY_PORT} "
           f"(`bench/latency_proxy.py`) that adds {a.rtt_ms:g} ms of round trip and limits each connection to "
           f"{rate_text(a.rate)}, paced like a link (nginx's `limit_rate` lets each request's first second through at "
           "once). The rate is per connection, so a client that opens several connections can beat a single curl.",
           f"- **stream**: nginx on 127.0.0.1:{STREAM_PORT} behind its own proxy on 127.0.0.1:"
           f"{STREAM_PROXY_PORT}: {rate_text(getattr(a, 'stream_rate', '96k'))} per connection "
           f"(about 4× the 24,000 B/s of a 192 kb/s MP3) and {a.rtt_ms:g} ms of round trip; "
           f"{STREAM_PROXY_PORT}; only the streaming rows use it. Their reader reads 16 KiB each time the audio "
           "clock says the previous 16 KiB were played (like `RealTimeReader` in the integration tests) and "
           "judges the reads due after the first second.",
           *([f"- **bucket**: moto's S3 server (`moto_server`, Python) on 127.0.0.1:{S3_PORT}, bucket `{BUCKET}` "
              f"put once per run with boto3: web/wide's {WEB_WIDE:,} files under `{BUCKET_WIDE}/` and a "
              f"{BUCKET_BIG_SIZE // MiB} MiB multipart object, all public-read. Every client reads unsigned: "
              f"`rangefs mount --endpoint URL --path-style --no-sign-request s3://{BUCKET}/`, rclone's S3 backend "
              "(`--s3-provider Other --s3-env-auth=false` with empty keys, `--vfs-cache-mode full`), `aws s3 "
              "--no-sign-request` and boto3 unsigned. moto closes every connection and reads a whole object "
              "for each ranged GET: the figures are ratios to clients of the same server, not S3's speed."]
             if any(base_link(row.link) == "bucket" for row in rows) else []),
           *([f"- **https twins** (`-tls`): every link above has one, made by the run itself: a throwaway CA and a "
              "leaf certificate for IP 127.0.0.1 (`openssl`, in the work directory), nginx listening with `ssl http2` "
              f"{TLS_PORT_OFFSET} ports above each plain port (plain-tls on 127.0.0.1:{PLAIN_PORT + TLS_PORT_OFFSET}; "
              "the slow and stream twins are their latency proxies in front of nginx's TLS ports: TLS passes through "
              "them), each mirror's twin likewise, and moto serving TLS for the bucket's (HTTP/1.1: moto speaks no "
              "HTTP/2). Each client trusts that CA by its own option: `rangefs mount --ca-file`, `rclone --ca-cert`, "
              "`httpdirfs --cacert`, `curl --cacert`, `aria2c --ca-certificate`, `aws --ca-bundle`, boto3's `verify`, "
              "`ffprobe -ca_file -tls_verify 1`, mpg123 through curl with `CURL_CA_BUNDLE`. Python's client of the "
              "fio baseline speaks HTTP/1.1 over TLS. The proxies pace each connection, and an HTTP/2 client "
              "multiplexes its transfers onto one: on slow-tls several transfers share one connection's rate. "
              "**https÷http** is RangeFS's figure (its defaults) on the https "
              "row ÷ the same on its http twin, the row above it (**≈**: within the repeats' spread, some repeat "
              "over https as good as some repeat over http); the CPU rows give each system's and curl's CPU "
              "seconds for the same cold read over both."]
             if any(is_tls(row.link) for row in rows) else []),
           (f"- RangeFS runs with its defaults (256 KiB blocks, --max-downloads 3) and `--prefetch {a.rangefs_prefetch}` "
            "in every row (`--rangefs-prefetch`)." if getattr(a, "rangefs_prefetch", None) else
            "- RangeFS runs with its defaults in every row (256 KiB blocks, --max-downloads 3, `--prefetch all`: "
            "the heads and tails of every file of the mount, then every file whole, in the background while the "
            "row's program reads), and again, right after each group, the same group with `--prefetch none` "
            "(the **none** column: no background work, a reader's own requests and read-ahead only). **cost** is "
            "how much longer (or slower) the defaults took than `--prefetch none` in the rows that time what a "
            "program waits for: what the background work cost the program, as far as two runs of a group minutes "
            "apart can tell (loopback rows move by 10–30 % between runs whatever the policy); **≈** marks a cost "
            "within the repeats' spread, where some repeat with each policy was as good as some repeat with "
            "the other. The prefetcher row runs with the defaults only."),
           "- rclone: `rclone mount :http: --http-url URL --vfs-cache-mode full --read-only --daemon`; httpdirfs: "
           "`httpdirfs --cache --no-range-check URL` (nginx `autoindex on`). Both mount the same tree that the "
           "RangeFS manifests list.",
           "- Cold = a fresh mount with an empty cache for every repeat; mount time is not counted except in the "
           "mount-time row.",
           f"- fio: `--rw=randread --ioengine=psync --direct=1 --readonly`, the median of {a.repeats} runs of "
           f"{a.fio_runtime} s per cell, each on a fresh mount (the sparse row: one run of 2,000 reads); "
           "the server's bytes are summed from nginx's access log ($body_bytes_sent).",
           "- Server, client and filesystem share the same 2 cores, so loopback rows are CPU-bound and move by "
           "tens of percent between runs, more when the machine is busy (load average below). The disk is a "
           "virtual disk: after `drop_caches` the host may still cache it, so \"disk\" is an upper-bound-ish "
           "figure that varies between runs.", ""]
    if ctx.notes:
        out += ["- " + n for n in ctx.notes] + [""]
    rows = beside_twins(rows)
    by_id = {row.rid: row for row in rows}
    extra = optional_tools(rows)
    both = policy_columns(rows)
    https = https_column(rows)
    out += ["## Results", "",
            "| row | unit | RangeFS | " + ("none | cost | " if both else "") + ("https÷http | " if https else "")
            + "baseline | ratio | target | rclone | httpdirfs | " + "".join(f"{tool} | " for tool in extra)
            + "baseline is |",
            "| --- | --- | ---: | " + ("---: | ---: | " if both else "") + ("---: | " if https else "")
            + "---: | ---: | --- | ---: | ---: | " + "---: | " * len(extra) + "--- |"]
    for row in rows:
        c = table_cells(row, by_id)
        out.append(f"| {md_escape(row.label.strip())} | {row.unit} | {c['rangefs']} | "
                   + (f"{c[NONE_KEY]} | {c['cost']} | " if both else "")
                   + (f"{c['https']} | " if https else "")
                   + f"{c['baseline']} | {c['ratio']} | {c['target']} | {c['rclone']} | {c['httpdirfs']} | "
                   + "".join(f"{c[tool]} | " for tool in extra) + f"{md_escape(row.baseline_label)} |")
    out += ["", "Ratio is RangeFS (its defaults) ÷ baseline. ✓/✗: the issue's target met or missed in this run.", ""]
    notes = [(row, row.note.strip()) for row in rows if row.note.strip()]
    na = [(row, k, v) for row in rows for k, v in row.values.items() if isinstance(v, str)]
    if notes or na:
        out += ["### Notes on rows", ""]
        out += [f"- {md_escape(row.label.strip())}: {note}" for row, note in notes]
        out += [f"- {md_escape(row.label.strip())}, {k}: {md_escape(v)}" for row, k, v in na]
        out.append("")
    ahead = [row for row in rows if row.ahead() is False]
    out += ["### Targets", ""]
    for row in rows:
        met = row.met()
        if met is not None:
            out.append(f"- {'met' if met else '**missed**'}: {md_escape(row.label.strip())} — target {row.target_text}, "
                       f"measured {table_cells(row)['ratio'] or fmt(row.values.get('rangefs')) + ' ' + row.unit}")
    if ahead:
        out.append("- **behind rclone, httpdirfs or aria2c** on: " + "; ".join(md_escape(r.label.strip()) for r in ahead))
    costly = [row for row in rows if (row.background_cost() or 0) > BACKGROUND_COST_LIMIT]
    within = [row for row in costly if row.cost_within_spread()]
    beyond = [row for row in costly if row not in within]     # beyond the spread, or measured once

    def listed(picked):
        return "; ".join(f"{md_escape(r.label.strip())} ({table_cells(r)['cost']})" for r in picked)

    if both:
        out.append(f"- background work cost a program more than {BACKGROUND_COST_LIMIT:.0%} (defaults against "
                   "`--prefetch none`) on: " + (listed(beyond) or "no row"))
        if within:
            out.append(f"- more than {BACKGROUND_COST_LIMIT:.0%} but within the spread of the repeats on: " + listed(within))
    out += ["", "![RangeFS, rclone and httpdirfs relative to the baseline of each row](benchmarks.png)", "",
            "## Machine and versions", ""]
    out += [f"- {k}: {md_escape(v)}" for k, v in info.items()]
    out += ["", "## Rerun", "",
            "```sh", "bench/run.sh                 # everything, each group with both policies; needs root (apt, drop_caches) and /dev/fuse",
            "bench/run.sh --repeats 5     # more repeats",
            "bench/run.sh --only cold,ttfb --skip-others   # a subset, RangeFS and the baselines only",
            "bench/run.sh --rangefs-prefetch none          # RangeFS with that --prefetch only",
            "bench/run.sh --links plain,plain-tls          # loopback and its https twin only",
            "```", "",
            "It installs fio, sox, rclone, httpdirfs, awscli, aria2, davfs2, sshfs, python3-mutagen and python3-matplotlib with apt (plus the "
            "project's own dependencies, moto and boto3 among them), builds `rangefs` in release mode, generates its data once "
            "into `bench/data/` (about 1.4 GiB, plus a 4 GiB sparse file), runs each group on each link with RangeFS's "
            "defaults beside the other tools and at once again with RangeFS alone and `--prefetch none`, and rewrites "
            "this page and `benchmarks.png`. "
            "Raw figures: `docs/benchmarks.json` (what `--merge` puts a run's rows into).", ""]
    page = DOCS / "benchmarks.md"
    out += [KEPT_MARKER, kept_sections(page)]
    page.write_text(project_relative("\n".join(out)))


# What follows this line on the page is written by hand (targeted runs and what they showed) and
# kept when the page is rewritten.
KEPT_MARKER = "<!-- Written by hand below this line; bench/run.sh keeps it when it rewrites the page. -->"


def kept_sections(page):
    try:
        text = page.read_text()
    except OSError:
        return ""
    _, marker, kept = text.partition(KEPT_MARKER)
    return kept.lstrip("\n") if marker else ""
