"""The directory rows: ls of a 100-file directory (group ls), the 100,000-entry manifest (many)
and a web directory mounted by its URL (web)."""
from ..config import MANY_FLAT, MANY_PER_DIR, WEB_DIRS, WEB_PER_DIR, WEB_WIDE, WWW
from ..process import BenchError, log, median, timed
from ..context import mounted, vm_hwm_mib
from ..servers import LogMark
from ..results import Row, failed_cells, measure_cell
from ..primitives import systems

# The web tree's directory of WEB_WIDE files (the web, webdav and sftp groups list it).
WIDE = "web/wide"


def ls_wide(m):
    """Seconds of ls -la of WIDE on the mount `m`, which must list every file."""
    seconds, result = timed(["ls", "-la", m.path(WIDE)], 600)
    files = [l for l in result.stdout.splitlines() if l.startswith("-")]
    if len(files) != WEB_WIDE:
        raise BenchError(f"ls -la listed {len(files)} files, expected {WEB_WIDE}")
    return seconds


def check_listing(out, count):
    entries = [l for l in out.splitlines() if l.startswith("-")]
    sizes = {l.split()[-1]: int(l.split()[4]) for l in entries}
    if len(entries) != count:
        raise BenchError(f"ls -la listed {len(entries)} files, expected {count}")
    for name, size in sizes.items():
        if (WWW / "small" / name).stat().st_size != size:
            raise BenchError(f"ls -la shows the wrong size for {name}")


def rows_ls(ctx, link):
    n = ctx.args.repeats
    cold = Row(f"ls-cold-{link}", f"ls -la of a 100-file directory, cold ({link})", "ms", "lower",
               "curl -I of the 100 URLs (one process)", link)
    warm = Row(f"ls-warm-{link}", f"ls -la of a 100-file directory, warm ({link})", "ms", "lower",
               "ls -la of the local directory", link)
    urls = [ctx.url(link, f"small/f{i:03d}.bin") for i in range(100)]

    def baseline_cold():
        return median([timed(ctx.curl(link) + ["-I"] + urls, 120)[0] for _ in range(n)]) * 1000

    def baseline_warm():
        return median([timed(["ls", "-la", str(WWW / "small")], 60)[0] for _ in range(n)]) * 1000

    measure_cell(cold, "baseline", baseline_cold)
    measure_cell(warm, "baseline", baseline_warm)
    for name in systems(ctx):
        def measure(name=name):
            t_cold, t_warm = [], []
            for _ in range(n):
                with mounted(ctx, name, link) as m:
                    seconds, result = timed(["ls", "-la", m.path("small")], 300)
                    check_listing(result.stdout, 100)
                    t_cold.append(seconds)
                    for _ in range(n):
                        seconds, result = timed(["ls", "-la", m.path("small")], 300)
                        check_listing(result.stdout, 100)
                        t_warm.append(seconds)
            return median(t_cold) * 1000, median(t_warm) * 1000
        try:
            cold.values[name], warm.values[name] = measure()
            log(f"  ls [{name}] cold {cold.values[name]:.1f} ms, warm {warm.values[name]:.1f} ms")
        except BenchError as error:
            cold.values[name] = warm.values[name] = f"n/a: {error}"
            log(f"  ls [{name}] n/a: {error}")
    return [cold, warm]


def rows_many(ctx, link):
    mount_row = Row("many-mount", "100,000-entry manifest: mount time", "s", "lower", "target", link,
                    ("abs<=", 2.0), "≤ 2 s",
                    note="RangeFS: `rangefs mount` of the manifest until mounted; rclone and "
                         "httpdirfs mount the same tree from nginx's autoindex listings.")
    ls_row = Row("many-ls", f"100,000 entries: ls (names) of its largest directory ({MANY_FLAT:,} files)", "ms",
                 "lower", "ls of the local directory", link)
    lsl_row = Row("many-lsl", "100,000 entries: ls -l of a 100-file directory, cold", "ms", "lower",
                  "curl -I of the 100 URLs (one process)", link)
    rss_row = Row("many-rss", "100,000 entries: peak RSS after those listings", "MiB", "lower", "target",
                  link, ("abs<=", 64), "≤ 64 MiB")
    rows = [mount_row, ls_row, lsl_row, rss_row]
    mount_row.values["baseline"] = 2.0
    rss_row.values["baseline"] = 64.0
    flat = "many/flat"
    measure_cell(ls_row, "baseline", lambda: median(
        [timed(["ls", "-1", "--color=never", str(WWW / flat)], 60)[0] for _ in range(3)]) * 1000)
    urls = [ctx.url(link, f"many/d000/f{j:03d}.bin") for j in range(MANY_PER_DIR)]
    measure_cell(lsl_row, "baseline", lambda: median(
        [timed(ctx.curl(link) + ["-I"] + urls, 120)[0] for _ in range(3)]) * 1000)
    for name in systems(ctx):
        try:
            with mounted(ctx, name, link, manifest="many") as m:
                mount_row.values[name] = m.mount_seconds
                if m.pid:
                    rss_row.note += f" {name}: {vm_hwm_mib(m.pid):.0f} MiB right after mounting."
                seconds, result = timed(["ls", "-1", "--color=never", m.path(flat)], 600)
                if len(result.stdout.split()) != MANY_FLAT:
                    raise BenchError(f"ls listed {len(result.stdout.split())} names")
                ls_row.values[name] = seconds * 1000
                seconds, result = timed(["ls", "-l", m.path("many/d000")], 600)
                if len([l for l in result.stdout.splitlines() if l.startswith("-")]) != MANY_PER_DIR:
                    raise BenchError("ls -l listed the wrong number of files")
                lsl_row.values[name] = seconds * 1000
                rss_row.values[name] = vm_hwm_mib(m.pid) if m.pid else "n/a: mount process not found"
            log(f"  many [{name}] mount {mount_row.values[name]:.2f} s, ls {ls_row.values[name]:.0f} ms, "
                f"ls -l {lsl_row.values[name]:.0f} ms, rss {rss_row.values[name]}")
        except BenchError as error:
            failed_cells(rows, name, error, "many")
    return rows


def rows_web(ctx, link):
    """A web directory mounted by its URL, as each tool mounts nginx's autoindex listings."""
    n = ctx.args.repeats
    tree = "web/tree"
    cold = Row(f"web-ls-{link}", f"web directory: mount, then ls -la of a {WEB_WIDE:,}-file directory ({link})", "ms",
               "lower", "curl of that directory's listing page", link,
               note="From the start of the mount command to the end of ls -la, cache empty.")
    again = Row(f"web-ls-again-{link}", f"web directory: the same after a remount on the same cache ({link})", "ms",
                "lower", "curl of that directory's listing page", link)
    walk = Row(f"web-find-{link}", f"web directory: find -type f of a {WEB_DIRS * WEB_PER_DIR:,}-file tree ({link})", "s",
               "lower", f"curl of its {WEB_DIRS + 1} listing pages (one process)", link)
    sent = Row(f"web-find-requests-{link}", f"web directory: requests sent for that walk ({link})", "requests",
               "lower", "its listing pages", link)
    rows = [cold, again, walk, sent]
    page = [ctx.url(link, WIDE + "/")]
    pages = [ctx.url(link, tree + "/")] + [ctx.url(link, f"{tree}/d{d:02d}/") for d in range(WEB_DIRS)]
    measure_cell(cold, "baseline", lambda: median([timed(ctx.curl(link) + ["-o", "/dev/null"] + page, 60)[0]
                                                   for _ in range(n)]) * 1000)
    again.values["baseline"] = cold.values["baseline"]
    measure_cell(walk, "baseline", lambda: median([timed(ctx.curl(link) + sum((["-o", "/dev/null", u] for u in pages), []), 300)[0]
                                                   for _ in range(n)]))
    sent.values["baseline"] = float(len(pages))

    for name in systems(ctx):
        try:
            t_cold, t_again, t_walk, requests = [], [], [], []
            for _ in range(n):
                cache = ctx.new_dir("cache", f"{name}-web")
                with mounted(ctx, name, link, listing=True, cache=cache, keep_cache=True) as m:
                    t_cold.append(m.mount_seconds + ls_wide(m))
                with mounted(ctx, name, link, listing=True, cache=cache) as m:
                    t_again.append(m.mount_seconds + ls_wide(m))
                with mounted(ctx, name, link, listing=True) as m:
                    mark = LogMark(ctx, link)
                    seconds, result = timed(["find", m.path(tree), "-type", "f"], 1200)
                    count = len(result.stdout.splitlines())
                    if count != WEB_DIRS * WEB_PER_DIR:
                        raise BenchError(f"find found {count} files, expected {WEB_DIRS * WEB_PER_DIR}")
                    t_walk.append(seconds)
                    requests.append(mark.requests())
                    # Each repeat, as the fio rows log theirs: a median hides a walk the background ran beside.
                    log(f"  {walk.rid} [{name}] {seconds:.2f} s, {requests[-1]} requests")
            cold.values[name], again.values[name] = median(t_cold) * 1000, median(t_again) * 1000
            walk.values[name], sent.values[name] = median(t_walk), float(median(requests))
            log(f"  web [{name}] ls {cold.values[name]:.0f} ms, again {again.values[name]:.0f} ms, "
                f"find {walk.values[name]:.2f} s with {sent.values[name]:.0f} requests")
        except BenchError as error:
            failed_cells(rows, name, error, "web")
    return rows
