"""The command line and the run: the groups and the links each runs on (each link and its https
twin), the tools it needs, and main, which measures each group with RangeFS's defaults and then at
once with --prefetch none."""
import argparse
import json
import os
import shutil
import signal
import sys
import time
import traceback

from .config import BENCH, DATA, DOCS, PLAIN_PORT, PROXY_PORT, SLOW_PORT, project_relative
from .process import BenchError, Interrupted, log
from .context import Context, clear_stale_mounts
from .data import ensure_library, ensure_sonic_library, ensure_stream_file, ensure_web_tree, generate_data, write_manifests
from .servers import rate_text, start_servers
from .results import Row, merge_none_policy, name_https_rows
from .rows.reads import row_cold_sequential, row_cpu, row_parallel, row_rss_sparse, row_ttfb, rows_warm
from .rows.fio import rows_fio
from .rows.media import rows_media, rows_streaming
from .rows.listing import rows_ls, rows_many, rows_web
from .rows.prefetch import row_prefetch
from .rows.library import rows_library
from .rows.bucket import rows_bucket
from .rows.mirrors import rows_mirrors
from .rows.webdav import rows_webdav
from .rows.sftp import rows_sftp
from .rows.subsonic import rows_subsonic
from .report import machine_info, print_table, source_commit, write_markdown
from .chart import write_chart
from .tls import base_link, is_tls, twin_link


# The figures docs/benchmarks.md shows, beside it: what --merge and --render-only start from.
PAGE_FIGURES = DOCS / "benchmarks.json"

GROUPS = ["cold", "cpu", "warm", "ttfb", "fio", "media", "ls", "parallel", "prefetch", "stream", "rss", "many",
          "web", "library", "bucket", "mirrors", "webdav", "sftp", "subsonic"]
# The links --links names: each and its https twin (plain-tls: nginx's TLS and HTTP/2 port).
LINKS = ("plain", "slow", "plain-tls", "slow-tls")
# Groups that run with the plain link (and with plain-tls, over https): "stream" on its own link
# (stream, stream-tls); "bucket" on its own server, moto (bucket, bucket-tls), which the slow link's
# nginx does not front; "mirrors" on its own three nginx (or their https twins).
PLAIN_ONLY = {"cpu", "warm", "fio", "stream", "rss", "many", "bucket", "mirrors"}
# A library's first scan is a question for the distant link; so are the WebDAV, SFTP and Subsonic
# servers (their own servers, each behind a latency proxy as the slow link's nginx, and an https
# twin but SFTP's).
SLOW_ONLY = {"library", "webdav", "sftp", "subsonic"}
# Groups whose protocol has no https twin: they run on the plain link of their pair alone.
NO_TWIN = {"sftp"}


def runs_on(group, link):
    base = base_link(link)
    return not (group in PLAIN_ONLY and base != "plain" or group in SLOW_ONLY and base != "slow"
                or group in NO_TWIN and is_tls(link))


def check_tools(ctx):
    for system, tool in (("rangefs", ctx.rangefs), ("rclone", "rclone"), ("httpdirfs", "httpdirfs"),
                         ("davfs2", "mount.davfs"), ("sshfs", "sshfs")):
        found = shutil.which(tool) or (os.path.isfile(tool) and os.access(tool, os.X_OK))
        ctx.available[system] = bool(found)
        if not found:
            ctx.available[system + "_why"] = f"{tool} is not installed"
    if ctx.available["davfs2"] and os.getuid() != 0:
        ctx.available.update(davfs2=False, davfs2_why="mount.davfs is run as root here, and this run is not")
    if not os.path.exists("/dev/fuse"):
        raise SystemExit("bench: /dev/fuse is missing; nothing can be mounted here")
    for tool in ("fio", "ffprobe", "mpg123", "sox", "curl", "openssl", "/usr/sbin/nginx"):
        if not shutil.which(tool):
            raise SystemExit(f"bench: {tool} is missing (bench/run.sh installs it)")


def main():
    parser = argparse.ArgumentParser(description="RangeFS benchmark suite (use bench/run.sh)")
    parser.add_argument("--rangefs", help="the rangefs binary")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rate", default="2m", help="per-connection rate of the slow link, paced by its proxy (nginx units: 2m, 96k)")
    parser.add_argument("--rtt-ms", type=float, default=40.0, help="round trip added on the slow and stream links")
    parser.add_argument("--stream-rate", default="96k", help="per-connection rate of the streaming link, paced by its proxy (about 4x 192 kb/s)")
    parser.add_argument("--stream-seconds", type=float, default=60.0, help="seconds of audio clock the streaming row plays")
    parser.add_argument("--fio-runtime", type=int, default=10)
    parser.add_argument("--mirror-rate", default="20m", help="what each of the three mirrors sends per connection, paced by its proxy (96k, 20m)")
    parser.add_argument("--only", default=",".join(GROUPS), help="comma-separated groups: " + ",".join(GROUPS))
    parser.add_argument("--links", default=",".join(LINKS),
                        help="comma-separated links: " + ",".join(LINKS) + " (an https twin is a link's name with -tls; "
                        "the stream, bucket and mirror groups follow plain and plain-tls)")
    parser.add_argument("--skip-others", action="store_true", help="RangeFS and the baselines only")
    parser.add_argument("--rangefs-prefetch", choices=["all", "opened", "none"],
                        help="mount RangeFS with this --prefetch in every row (default: each group with --prefetch all, "
                        "beside the other tools, then at once alone with --prefetch none)")
    parser.add_argument("--s3-python", help="a python3 with boto3 and moto for the bucket rows "
                        "(default: the first python3 on PATH that has them)")
    parser.add_argument("--work", default=str(BENCH / "data" / "work"))
    parser.add_argument("--no-docs", action="store_true", help="print the table only")
    parser.add_argument("--render-only", action="store_true",
                        help="rewrite docs/benchmarks.md and .png from the page's figures (docs/benchmarks.json)")
    parser.add_argument("--merge", action="store_true",
                        help="put the rows this run measures in place of the same rows of the page's figures "
                        "(docs/benchmarks.json), keep the others, and list this run among the page's parts (when, "
                        "which groups on which links, which build, at what load): a whole run may be made in parts")
    args = parser.parse_args()
    if args.render_only:
        saved = saved_figures()
        rows = [Row.from_json(r) for r in saved["rows"]]
        ctx = Context(argparse.Namespace(**saved["args"]))
        ctx.notes = saved["notes"]
        print_table(rows)
        write_markdown(ctx, rows, saved["machine"], saved_parts(saved))
        write_chart(rows, DOCS / "benchmarks.png")
        return
    if not args.rangefs:
        parser.error("--rangefs is required")
    groups = [g.strip() for g in args.only.split(",") if g.strip()]
    links = [l.strip() for l in args.links.split(",") if l.strip()]
    for g in groups:
        if g not in GROUPS:
            raise SystemExit(f"bench: unknown group {g!r}; groups: {', '.join(GROUPS)}")
    for link in links:
        if link not in LINKS:
            raise SystemExit(f"bench: unknown link {link!r}; links: {', '.join(LINKS)}")

    ctx = Context(args)
    ctx.source_commit = source_commit()

    def on_signal(signum, frame):
        raise Interrupted(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    started = time.perf_counter()
    rows = []
    try:
        check_tools(ctx)
        clear_stale_mounts(ctx.work)
        for sub in ("mnt", "cache"):
            shutil.rmtree(ctx.work / sub, ignore_errors=True)
        ctx.files = ensure_stream_file(generate_data())
        ensure_web_tree()
        if "library" in groups:
            ensure_library()
        if "subsonic" in groups:
            try:
                ensure_sonic_library()
            except BenchError as error:     # only the subsonic rows need it; they fail on their own
                ctx.notes.append(f"The Subsonic library could not be made: {error}.")
        ctx.tls.make()
        write_manifests(ctx)
        # What the set-up wrote (data made "once", manifests) goes to disk now: its writeback would
        # otherwise run under the first group's first policy alone, a cost the other never meets.
        os.sync()
        start_servers(ctx)
        log(f"nginx on 127.0.0.1:{PLAIN_PORT} (plain) and :{SLOW_PORT}; "
            f"latency proxy on :{PROXY_PORT} ({args.rtt_ms:g} ms RTT, {rate_text(args.rate)} per connection); "
            f"https twins (TLS, HTTP/2, CA {ctx.tls.ca}): " + ", ".join(ctx.links[l] for l in ctx.links if is_tls(l)))
        measure = {
            "cold": lambda l: row_cold_sequential(ctx, l),
            "cpu": lambda l: row_cpu(ctx, l),
            "warm": lambda l: rows_warm(ctx, l),
            "ttfb": lambda l: row_ttfb(ctx, l),
            "fio": lambda l: rows_fio(ctx, l),
            "media": lambda l: rows_media(ctx, l),
            "ls": lambda l: rows_ls(ctx, l),
            "parallel": lambda l: row_parallel(ctx, l),
            "prefetch": lambda l: row_prefetch(ctx, l),
            "rss": lambda l: row_rss_sparse(ctx, l),
            "many": lambda l: rows_many(ctx, l),
            "web": lambda l: rows_web(ctx, l),
            "library": lambda l: rows_library(ctx, l),
            "bucket": lambda l: rows_bucket(ctx, twin_link("bucket", is_tls(l))),
            "stream": lambda l: rows_streaming(ctx, twin_link("stream", is_tls(l))),
            "mirrors": lambda l: rows_mirrors(ctx, l),
            "webdav": lambda l: rows_webdav(ctx, l),
            "sftp": lambda l: rows_sftp(ctx, l),
            "subsonic": lambda l: rows_subsonic(ctx, l),
        }
        # Each group on each link with RangeFS's defaults first (with the other tools), then at once,
        # unless one policy was asked for, the same group with RangeFS alone and --prefetch none: what
        # background work costs each row, the two measured minutes apart on the same machine load.
        policies = [args.rangefs_prefetch] if args.rangefs_prefetch else ["all", "none"]
        for group in GROUPS:
            if group not in groups:
                continue
            for link in links:
                if not runs_on(group, link):
                    continue
                for number, policy in enumerate(policies):
                    if group == "prefetch" and policy != "all":
                        log(f"== prefetch ({link}): skipped with --prefetch {policy} (the row is about --prefetch all)")
                        continue
                    ctx.policy, ctx.others = policy, number == 0 and not args.skip_others
                    log(f"== {group} ({link}), RangeFS --prefetch {policy}")
                    try:
                        measured = name_https_rows(measure[group](link), link)
                    except Exception as error:      # a bench bug: the other groups' figures still count
                        log(traceback.format_exc())
                        ctx.notes.append(f"The {group} rows ({link}, --prefetch {policy}) failed: "
                                         f"{type(error).__name__}: {error}.")
                        continue
                    if number == 0:
                        rows += measured
                    else:
                        merge_none_policy(rows, measured)
    except (KeyboardInterrupt, Interrupted) as error:
        log(f"interrupted ({error}); cleaning up")
        ctx.cleanup()
        sys.exit(130)
    finally:
        ctx.cleanup()
    elapsed = time.perf_counter() - started
    print_table(rows)
    info = machine_info(ctx)
    parts = [run_part(vars(args), info, elapsed)]
    if args.merge:
        rows, info, elapsed, parts = merged_into_saved(rows, ctx, parts[0])
    results = {"machine": info, "args": vars(args), "elapsed_s": elapsed, "notes": ctx.notes, "parts": parts,
               "rows": [r.to_json() for r in rows]}
    figures = json.dumps(results, indent=1, ensure_ascii=False) + "\n"
    (DATA / "results.json").write_text(figures)
    if not args.no_docs:
        DOCS.mkdir(exist_ok=True)
        PAGE_FIGURES.write_text(project_relative(figures))
        write_markdown(ctx, rows, info, parts)
        write_chart(rows, DOCS / "benchmarks.png")
        log("wrote docs/benchmarks.md and docs/benchmarks.png")
    log(f"done in {parts[-1]['minutes']:.1f} min")


def saved_figures():
    """The figures the page shows (docs/benchmarks.json, kept with the page so that a run on any
    machine can measure some rows again in their place)."""
    if not PAGE_FIGURES.exists():
        raise SystemExit(f"bench: {PAGE_FIGURES.relative_to(BENCH.parent)} is missing: run the groups once "
                         "without --merge (it writes the page and its figures), then --merge the others")
    return json.loads(PAGE_FIGURES.read_text())


def run_part(args, info, elapsed):
    """What one run measured, when, on which build and at what load: a page made in parts lists each."""
    links = [l.strip() for l in args["links"].split(",") if l.strip()]
    groups = [g for g in (g.strip() for g in args["only"].split(",")) if any(runs_on(g, l) for l in links)]
    return {"date": info["date"], "minutes": round(elapsed / 60, 1), "groups": groups, "links": links,
            "repeats": args["repeats"], "others": not args["skip_others"], "rangefs": info.get("rangefs", "?"),
            "load at the start": info.get("load average (1/5/15 min) at the start", "?")}


def saved_parts(saved):
    """The parts of the page's figures; figures kept before parts were recorded are one part."""
    return saved.get("parts") or [run_part(saved["args"], saved["machine"], saved["elapsed_s"])]


def merged_into_saved(rows, ctx, part):
    """The page's rows (docs/benchmarks.json) with this run's in place of the same rows and any new
    ones after them; the page's machine facts and notes kept, and this run added to its parts."""
    saved = saved_figures()
    fresh = {row.rid: row for row in rows}
    merged = [fresh.pop(d["id"]) if d["id"] in fresh else Row.from_json(d) for d in saved["rows"]]
    merged += [row for row in rows if row.rid in fresh]
    ctx.notes = saved.get("notes", []) + ctx.notes
    return merged, saved["machine"], saved["elapsed_s"] + part["minutes"] * 60, saved_parts(saved) + [part]
