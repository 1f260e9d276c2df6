"""The SFTP rows (group sftp): OpenSSH's sshd over the slow link, mounted by RangeFS (sftp://), sshfs
and rclone's sftp remote: a listing of a 1,000-file directory, a cold sequential read, the first
bytes at an offset, a remount on the kept cache, and the library's first scans (the rows shares.py
makes). SFTP has no https twin: the group runs on the slow link alone."""
from ..config import SFTP_PROXY_PORT, WEB_WIDE, WWW
from ..process import BenchError
from ..servers import LogMark
from ..sources import SftpLogMark
from .listing import WIDE
from .shares import Share, rows_share


class SFTP(Share):
    """sshd and its sftp-server (sources.start_sshd); clients read bench/data/www by its absolute path,
    sign in with the run's key and check the host key against the run's known_hosts."""
    server, title, collection = "sftp", "SFTP", "directory"
    others = ("sshfs", "rclone")
    server_note = "OpenSSH's sshd (Debian's sftp-server) behind the latency proxy, no https twin (slow link only)"
    listing_baseline = "curl of that directory's listing (sftp://, one process)"
    fetched = "the bytes sftp-server read under library/ and the file handles it closed (its log)"
    requests = "file handles"
    ranged_code = "000"     # curl states no response code for SFTP

    def curl(self):
        return ["curl", "-sS", "--fail"] + self.ctx.ssh.curl_options()

    def url(self, rel):
        return f"{self.base}{WWW}/{rel}"

    def listing_seconds(self):
        seconds, result = self.timed_curl([self.url(WIDE) + "/"])
        files = [l for l in result.stdout.splitlines() if l.startswith("-")]
        if len(files) != WEB_WIDE:
            raise BenchError(f"curl listed {len(files)} files, expected {WEB_WIDE}")
        return seconds

    def traffic(self):
        LogMark.settle(self.ctx, "sftp")     # a session that just ended logs its handles as it goes
        mark = SftpLogMark(self.ctx, "sftp")
        return lambda: mark.traffic(self.ctx, "sftp", str(WWW / "library").lstrip("/") + "/")

    def mount_command(self, system, directory=""):
        ctx, keys, share, path = self.ctx, self.ctx.ssh, self.url(directory), f"{WWW}/{directory}"

        def command(mnt, cache):
            if system == "rangefs":
                return [ctx.rangefs, "mount", share, str(mnt), "--cache-dir", str(cache), "--prefetch", ctx.policy,
                        "--known-hosts", str(keys.known_hosts), "--identity", str(keys.identity)], None
            if system == "rclone":
                return ["rclone", "mount", f":sftp:{path}", str(mnt), "--sftp-host", "127.0.0.1",
                        "--sftp-port", str(SFTP_PROXY_PORT), "--sftp-user", keys.user,
                        "--sftp-key-file", str(keys.identity), "--sftp-known-hosts-file", str(keys.known_hosts),
                        "--config", str(ctx.work / "rclone.conf"), "--read-only", "--vfs-cache-mode", "full",
                        "--cache-dir", str(cache), "--daemon", "--log-file", str(cache / "rclone.log"),
                        "--log-level", "NOTICE"], None
            # sshfs: its own cache of names and attributes (dir_cache, on by default); it reads through
            # ssh, which signs in with the run's key alone and checks the host key against the run's file.
            return ["sshfs", f"{keys.user}@127.0.0.1:{path}", str(mnt), "-o",
                    f"ro,dir_cache=yes,IdentityFile={keys.identity},IdentitiesOnly=yes,"
                    f"UserKnownHostsFile={keys.known_hosts},StrictHostKeyChecking=yes,BatchMode=yes,"
                    f"Port={SFTP_PROXY_PORT}"], None
        return command


def rows_sftp(ctx, link):
    """What an SFTP share costs each client over a distant link (40 ms, 2 MiB/s per connection)."""
    return rows_share(ctx, link, SFTP)
