"""The rows the file-sharing groups (webdav, sftp) have in common: their server behind the slow
link's latency proxy, mounted by RangeFS and by the clients people mount that protocol with, each
row beside a one-process curl of the same request in the same run: mount and `ls -la` of a
1,000-file directory, the same after a remount on the kept cache, a cold sequential read, the
first bytes at an offset, and the library's first scans (library.py's scan_rows)."""
import shlex

from ..config import LIBRARY, MID, SLOW_SEQ, WEB_WIDE, WEBDAV_OFFSET, MiB
from ..process import BenchError, log, median, run, timed
from ..context import mounted
from ..results import Row, failed_cells, measure_cell
from ..primitives import original_bytes, read_all, timed_pread, verify
from ..sources import start
from ..tls import is_tls
from .library import scan_rows
from .listing import WIDE, ls_wide
# The other clients fetch more than the bytes asked for (davfs2 a whole file when it is opened,
# rclone in full cache mode); a bound, not --repeats.
OTHERS_READ_TIMEOUT = 300


class Share:
    """What the common rows need of one group's protocol; webdav.py and sftp.py each define one.
    `base` is the server's URL through its latency proxy (sources.start)."""
    server = ""             # the server sources.start starts; the rows' ids start with it
    title = ""              # the rows' labels start with it
    collection = ""         # what the protocol calls a directory
    others = ()             # the other clients, measured once per row
    server_note = ""        # the first row's note: the server and how it is reached
    listing_baseline = ""   # what the listing rows' baseline is
    first_note = ""         # the first-bytes row's note: how the other clients read a file
    fetched = ""            # what the library rows count as fetched, and the word for their requests
    requests = "requests"
    ranged_code = "206"     # curl's %{response_code} after a ranged fetch

    def __init__(self, ctx, link, base):
        self.ctx, self.link, self.base = ctx, link, base

    def curl(self):
        """curl and the options every fetch from the server takes."""
        raise NotImplementedError

    def timed_curl(self, args, timeout=120):
        """Seconds and result of curl with `args` after the options every fetch takes."""
        return timed(self.curl() + args, timeout)

    def url(self, rel):
        """The URL of `rel` (a path under bench/data/www)."""
        raise NotImplementedError

    def listing_seconds(self):
        """One baseline listing of WIDE, checked; its seconds."""
        raise NotImplementedError

    def mount_command(self, system, directory=""):
        """The command by which `system` mounts `directory` of the share (a function of the mount
        point and the cache directory, as Context.mount takes it)."""
        raise NotImplementedError

    def traffic(self):
        """Called before a mount: a function that, once it is unmounted, returns the bytes the
        server sent for the library and the number of its requests."""
        raise NotImplementedError

    @classmethod
    def systems(cls, ctx):
        return ["rangefs"] + (list(cls.others) if ctx.others else [])


def rows_share(ctx, link, kind):
    """What a share of the `kind` (a Share class) costs each client over a distant link (40 ms,
    2 MiB/s per connection): the listing a file manager shows, a whole file, a seek into a big one,
    a remount, and a media server's first scan of a library."""
    n = ctx.args.repeats
    title, server = kind.title, kind.server
    others = " and ".join(kind.others)
    ls = Row(f"{server}-ls-{link}", f"{title}: mount, then ls -la of a {WEB_WIDE:,}-file {kind.collection} ({link})",
             "ms", "lower", kind.listing_baseline, link,
             note=f"{kind.server_note}; from the start of the mount command to the end of ls -la, cache empty. "
                  f"{others} one run each in every row.")
    again = Row(f"{server}-ls-again-{link}", f"{title}: the same after a remount on the same cache ({link})", "ms",
                "lower", kind.listing_baseline, link)
    size = ctx.size(SLOW_SEQ)
    cold = Row(f"{server}-cold-{link}", f"{title}: cold sequential read, {size // MiB} MiB ({link})", "MB/s", "higher",
               "curl -o /dev/null", link, note="A fresh mount and cache, the page cache dropped; dd bs=1M, "
               "mount time not counted; the bytes checked by sha256.")
    first = Row(f"{server}-first-{link}", f"{title}: first 4 KiB at {WEBDAV_OFFSET // MiB} MiB of a cold "
                f"{ctx.size(MID) // MiB} MiB file ({link})", "ms", "lower", "curl of that range", link,
                note="stat, open and a 4 KiB pread on a fresh mount and cache (mount time not counted); "
                     "the bytes compared with the original." + (f" {kind.first_note}" if kind.first_note else ""))
    rows = [ls, again, cold, first]
    try:
        share = kind(ctx, link, start(ctx, server, is_tls(link)))
    except BenchError as error:
        for row in rows:
            row.values["baseline"] = f"n/a: {error}"
        for name in kind.systems(ctx):
            failed_cells(rows, name, f"the {title} server did not start: {error}", server)
        return rows
    measure_cell(ls, "baseline", lambda: median([share.listing_seconds() for _ in range(n)]) * 1000)
    again.values["baseline"] = ls.values["baseline"]
    measure_cell(cold, "baseline", lambda: baseline_cold(share, n, size))
    measure_cell(first, "baseline", lambda: baseline_first(share, n))
    for name in kind.systems(ctx):
        measure_listings(share, name, ls, again, n if name == "rangefs" else 1)
        measure_reads(share, name, cold, first, size)
    library = f"{LIBRARY}/"
    rows += scan_rows(ctx, link, f"{server}-library", f"{title}: ", f"The {kind.collection} {library} of the share "
                      f"({kind.server_note}) mounted", kind.systems(ctx),
                      lambda name: mounted(ctx, name, link, command=share.mount_command(name, library)),
                      share.traffic, kind.fetched, kind.requests)
    return rows


def baseline_cold(share, n, size):
    """MB/s of curl fetching the whole file (the median of n); then its bytes checked by sha256."""
    url = share.url(SLOW_SEQ)
    times = []
    for _ in range(n):
        seconds, result = timed(share.curl() + ["-o", "/dev/null", "-w", "%{size_download}", url], 600)
        if int(float(result.stdout.strip() or 0)) != size:
            raise BenchError(f"curl fetched {result.stdout} bytes")
        times.append(seconds)
    out = run(f"{shlex.join(share.curl() + [url])} | openssl dgst -sha256 -r", 600, shell=True).stdout
    if out.split()[0] != share.ctx.files[SLOW_SEQ]["sha256"]:
        raise BenchError(f"curl of {SLOW_SEQ} returned wrong bytes")
    return size / median(times) / 1e6


def baseline_first(share, n):
    """ms of curl fetching the 4 KiB at WEBDAV_OFFSET (the median of n), the bytes compared."""
    want = original_bytes(MID, WEBDAV_OFFSET, 4096)
    times = []
    for _ in range(n):
        out = share.ctx.work / "cache" / "baseline-first.out"
        out.parent.mkdir(parents=True, exist_ok=True)
        seconds, result = timed(share.curl() + ["-r", f"{WEBDAV_OFFSET}-{WEBDAV_OFFSET + 4095}", "-o", str(out),
                                                "-w", "%{response_code} %{size_download}", share.url(MID)], 120)
        if result.stdout.split() != [share.ranged_code, "4096"] or out.read_bytes() != want:
            raise BenchError(f"the range request answered {result.stdout.strip()}, or other bytes")
        out.unlink()
        times.append(seconds)
    return median(times) * 1000


def measure_listings(share, name, ls, again, repeats):
    """The listing rows' cells of `name`: a fresh mount and ls -la, then a remount on its cache."""
    ctx, command = share.ctx, share.mount_command(name)
    try:
        t_ls, t_again = [], []
        for _ in range(repeats):
            cache = ctx.new_dir("cache", f"{name}-{share.link}-{share.server}")
            with mounted(ctx, name, share.link, cache=cache, keep_cache=True, command=command) as m:
                t_ls.append(m.mount_seconds + ls_wide(m))
            with mounted(ctx, name, share.link, cache=cache, command=command) as m:
                t_again.append(m.mount_seconds + ls_wide(m))
        ls.values[name], again.values[name] = median(t_ls) * 1000, median(t_again) * 1000
        log(f"  {share.server} [{name}] ls {ls.values[name]:.0f} ms, again {again.values[name]:.0f} ms")
    except BenchError as error:
        failed_cells([ls, again], name, error, share.server)


def measure_reads(share, name, cold, first, size):
    """The cold read's and the first bytes' cells of `name`, each repeat on a fresh mount and cache."""
    ctx, command = share.ctx, share.mount_command(name)
    repeats = ctx.args.repeats if name == "rangefs" else 1
    timeout = 600 if name == "rangefs" else OTHERS_READ_TIMEOUT

    def read_cold():
        times = []
        for _ in range(repeats):
            with mounted(ctx, name, share.link, command=command) as m:
                ctx.drop_caches()
                times.append(read_all(m.path(SLOW_SEQ), size, timeout))
                verify(ctx, m.path(SLOW_SEQ), SLOW_SEQ)
        return size / median(times) / 1e6

    def read_first():
        want = original_bytes(MID, WEBDAV_OFFSET, 4096)
        times = []
        for _ in range(repeats):
            with mounted(ctx, name, share.link, command=command) as m:
                ctx.drop_caches()
                seconds, data, _ = timed_pread(m.path(MID), WEBDAV_OFFSET, 4096, timeout)
                if data != want:
                    raise BenchError("WRONG BYTES: the 4 KiB read differ from the original")
                times.append(seconds)
        return median(times) * 1000

    measure_cell(cold, name, read_cold)
    measure_cell(first, name, read_first)
