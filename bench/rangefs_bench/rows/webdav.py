"""The WebDAV rows (group webdav): Apache's mod_dav over the slow link, mounted by RangeFS (dav://),
davfs2 and rclone's webdav remote: a listing of a 1,000-file collection, a cold sequential read,
the first bytes at an offset, and a remount on the kept cache."""
import os
import shlex

from ..config import MID, SLOW_SEQ, WEB_WIDE, WEBDAV_OFFSET, MiB
from ..process import BenchError, log, median, run, timed
from ..context import mounted
from ..results import Row, failed_cells, measure_cell
from ..primitives import original_bytes, read_all, timed_pread, verify
from ..sources import start
from ..tls import is_tls

WIDE = "web/wide"
# davfs2 and rclone in full cache mode fetch more than the bytes asked for; a bound, not --repeats.
OTHERS_READ_TIMEOUT = 300


def dav_systems(ctx):
    return ["rangefs"] + (["davfs2", "rclone"] if ctx.others else [])


def mount_command(ctx, system, base, tls):
    """The command by which `system` mounts the WebDAV share at `base`/dav/ (a function of the
    mount point and the cache directory, as Context.mount takes it)."""
    share = base + "/dav/"

    def command(mnt, cache):
        if system == "rangefs":
            source = ("davs://" if tls else "dav://") + share.split("://", 1)[1]
            return [ctx.rangefs, "mount", source, str(mnt), "--cache-dir", str(cache), "--prefetch", ctx.policy] + \
                (["--ca-file", str(ctx.tls.ca)] if tls else []), None
        if system == "rclone":
            return ["rclone", "mount", ":webdav:", str(mnt), "--webdav-url", share, "--webdav-vendor", "other",
                    "--config", str(ctx.work / "rclone.conf"), "--read-only", "--vfs-cache-mode", "full",
                    "--cache-dir", str(cache), "--daemon", "--log-file", str(cache / "rclone.log"),
                    "--log-level", "NOTICE"] + (["--ca-cert", str(ctx.tls.ca)] if tls else []), None
        # davfs2: a configuration made for the run (its own cache, no questions, no locks: read only).
        secrets = cache / "secrets"
        secrets.write_text(f"{share} bench bench\n")     # the share asks for none; davfs2 asks unless told
        os.chmod(secrets, 0o600)
        os.chmod(cache, 0o777)      # mount.davfs runs as the davfs2 user once mounted
        # buf_size 64 (KiB): with the default, davfs2 1.6's readdir answers EINVAL on Linux 6.16 and later.
        conf = cache / "davfs2.conf"
        conf.write_text(f"ask_auth 0\nuse_locks 0\nbuf_size 64\ncache_dir {cache}\ncache_size 1024\nsecrets {secrets}\n"
                        + (f"trust_ca_cert {ctx.tls.ca}\n" if tls else ""))
        return ["mount.davfs", share, str(mnt), "-o", f"ro,conf={conf}"], None
    return command


def rows_webdav(ctx, link):
    """What a WebDAV share costs each client over a distant link (40 ms, 2 MiB/s per connection):
    the listing a file manager shows, a whole file, a seek into a big one, and a remount."""
    n = ctx.args.repeats
    tls = is_tls(link)
    ls = Row(f"webdav-ls-{link}", f"WebDAV: mount, then ls -la of a {WEB_WIDE:,}-file collection ({link})", "ms",
             "lower", "curl of that collection's PROPFIND (Depth: 1)", link,
             note="Apache mod_dav behind the latency proxy; from the start of the mount command to the end of "
                  "ls -la, cache empty. davfs2 and rclone one run each in every row.")
    again = Row(f"webdav-ls-again-{link}", f"WebDAV: the same after a remount on the same cache ({link})", "ms",
                "lower", "curl of that collection's PROPFIND (Depth: 1)", link)
    size = ctx.size(SLOW_SEQ)
    mib = size // MiB
    cold = Row(f"webdav-cold-{link}", f"WebDAV: cold sequential read, {mib} MiB ({link})", "MB/s", "higher",
               "curl -o /dev/null", link, note="A fresh mount and cache, the page cache dropped; dd bs=1M, "
               "mount time not counted; the bytes checked by sha256.")
    first = Row(f"webdav-first-{link}", f"WebDAV: first 4 KiB at {WEBDAV_OFFSET // MiB} MiB of a cold "
                f"{ctx.size(MID) // MiB} MiB file ({link})", "ms", "lower", "curl of that range", link,
                note="stat, open and a 4 KiB pread on a fresh mount and cache (mount time not counted); "
                     "the bytes compared with the original. davfs2 downloads a file whole when it is opened.")
    rows = [ls, again, cold, first]
    try:
        base = start(ctx, "webdav", tls)
    except BenchError as error:
        for row in rows:
            row.values["baseline"] = f"n/a: {error}"
        for name in dav_systems(ctx):
            failed_cells(rows, name, f"the WebDAV server did not start: {error}", "webdav")
        return rows
    curl = ctx.curl(link)
    collection = f"{base}/dav/{WIDE}/"

    def propfind():
        seconds, result = timed(curl + ["-X", "PROPFIND", "-H", "Depth: 1", "-o", "/dev/null", "-w", "%{http_code}",
                                        collection], 120)
        if result.stdout.strip() != "207":
            raise BenchError(f"PROPFIND answered {result.stdout.strip()}")
        return seconds

    def baseline_cold():
        url = f"{base}/dav/{SLOW_SEQ}"
        times = []
        for _ in range(n):
            seconds, result = timed(curl + ["-o", "/dev/null", "-w", "%{size_download}", url], 600)
            if int(float(result.stdout.strip() or 0)) != size:
                raise BenchError(f"curl fetched {result.stdout} bytes")
            times.append(seconds)
        dav_verify(ctx, link, url, SLOW_SEQ)
        return size / median(times) / 1e6

    def baseline_first():
        url = f"{base}/dav/{MID}"
        times = []
        for _ in range(n):
            seconds, result = timed(curl + ["-r", f"{WEBDAV_OFFSET}-{WEBDAV_OFFSET + 4095}", "-o", "/dev/null",
                                            "-w", "%{http_code} %{size_download}", url], 120)
            if result.stdout.split() != ["206", "4096"]:
                raise BenchError(f"the range request answered {result.stdout.strip()}")
            times.append(seconds)
        return median(times) * 1000

    measure_cell(ls, "baseline", lambda: median([propfind() for _ in range(n)]) * 1000)
    again.values["baseline"] = ls.values["baseline"]
    measure_cell(cold, "baseline", baseline_cold)
    measure_cell(first, "baseline", baseline_first)

    def ls_wide(m):
        seconds, result = timed(["ls", "-la", m.path(WIDE)], 600)
        files = [l for l in result.stdout.splitlines() if l.startswith("-")]
        if len(files) != WEB_WIDE:
            raise BenchError(f"ls -la listed {len(files)} files, expected {WEB_WIDE}")
        return seconds

    for name in dav_systems(ctx):
        command = mount_command(ctx, name, base, tls)
        repeats = n if name == "rangefs" else 1
        timeout = 600 if name == "rangefs" else OTHERS_READ_TIMEOUT
        try:
            t_ls, t_again = [], []
            for _ in range(repeats):
                cache = ctx.new_dir("cache", f"{name}-{link}-dav")
                with mounted(ctx, name, link, cache=cache, keep_cache=True, command=command) as m:
                    t_ls.append(m.mount_seconds + ls_wide(m))
                with mounted(ctx, name, link, cache=cache, command=command) as m:
                    t_again.append(m.mount_seconds + ls_wide(m))
            ls.values[name], again.values[name] = median(t_ls) * 1000, median(t_again) * 1000
            log(f"  webdav [{name}] ls {ls.values[name]:.0f} ms, again {again.values[name]:.0f} ms")
        except BenchError as error:
            failed_cells([ls, again], name, error, "webdav")

        def read_cold(name=name, command=command, repeats=repeats, timeout=timeout):
            times = []
            for _ in range(repeats):
                with mounted(ctx, name, link, command=command) as m:
                    ctx.drop_caches()
                    times.append(read_all(m.path(SLOW_SEQ), size, timeout))
                    verify(ctx, m.path(SLOW_SEQ), SLOW_SEQ)
            return size / median(times) / 1e6

        def read_first(name=name, command=command, repeats=repeats, timeout=timeout):
            want = original_bytes(MID, WEBDAV_OFFSET, 4096)
            times = []
            for _ in range(repeats):
                with mounted(ctx, name, link, command=command) as m:
                    ctx.drop_caches()
                    seconds, data, _ = timed_pread(m.path(MID), WEBDAV_OFFSET, 4096, timeout)
                    if data != want:
                        raise BenchError("WRONG BYTES: the 4 KiB read differ from the original")
                    times.append(seconds)
            return median(times) * 1000

        measure_cell(cold, name, read_cold)
        measure_cell(first, name, read_first)
    return rows


def dav_verify(ctx, link, url, rel):
    """curl of `url` gives the original bytes (sha256)."""
    out = run(f"{shlex.join(ctx.curl(link))} '{url}' | openssl dgst -sha256 -r", 600, shell=True).stdout
    if out.split()[0] != ctx.files[rel]["sha256"]:
        raise BenchError(f"curl of {rel} returned wrong bytes")
