"""The WebDAV rows (group webdav): Apache's mod_dav over the slow link, mounted by RangeFS (dav://),
davfs2 and rclone's webdav remote: a listing of a 1,000-file collection, a cold sequential read,
the first bytes at an offset, a remount on the kept cache, and the library's first scans (the
rows shares.py makes)."""
import os

from ..process import BenchError
from ..servers import LogMark
from ..tls import is_tls
from .listing import WIDE
from .shares import Share, rows_share


class WebDAV(Share):
    """Apache's mod_dav serving bench/data/www under /dav/ (sources.start_apache)."""
    server, title, collection = "webdav", "WebDAV", "collection"
    others = ("davfs2", "rclone")
    server_note = "Apache mod_dav behind the latency proxy"
    listing_baseline = "curl of that collection's PROPFIND (Depth: 1)"
    first_note = "davfs2 downloads a file whole when it is opened."
    fetched = "the bytes Apache sent under /dav/library/ and its requests (its access log)"

    def __init__(self, ctx, link, base):
        super().__init__(ctx, link, base)
        self.tls = is_tls(link)

    def curl(self):
        return self.ctx.curl(self.link)

    def url(self, rel):
        return f"{self.base}/dav/{rel}"

    def listing_seconds(self):
        seconds, result = self.timed_curl(["-X", "PROPFIND", "-H", "Depth: 1", "-o", "/dev/null",
                                           "-w", "%{http_code}", self.url(WIDE) + "/"])
        if result.stdout.strip() != "207":
            raise BenchError(f"PROPFIND answered {result.stdout.strip()}")
        return seconds

    def traffic(self):
        LogMark.settle(self.ctx, "webdav")
        mark = LogMark(self.ctx, "webdav")
        return lambda: mark.traffic(self.ctx, "webdav", "dav/library/")

    def mount_command(self, system, directory=""):
        ctx, tls, share = self.ctx, self.tls, self.url(directory)

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
            conf.write_text(f"ask_auth 0\nuse_locks 0\nbuf_size 64\ncache_dir {cache}\ncache_size 1024\n"
                            f"secrets {secrets}\n" + (f"trust_ca_cert {ctx.tls.ca}\n" if tls else ""))
            return ["mount.davfs", share, str(mnt), "-o", f"ro,conf={conf}"], None
        return command


def rows_webdav(ctx, link):
    """What a WebDAV share costs each client over a distant link (40 ms, 2 MiB/s per connection)."""
    return rows_share(ctx, link, WebDAV)
