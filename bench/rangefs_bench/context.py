"""The run's shared state and its mounts: Context (links and their https twins, the run's CA,
files, servers, what is mounted, the RangeFS policy of the group being run), Mount and
`with mounted(...)`, and finding a mount's process and its peak memory."""
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from .config import PLAIN_PORT, PROXY_PORT, STREAM_PROXY_PORT
from .process import BenchError, log, run, stop_server, wait_exit
from .bucket_server import bucket_mount_command
from .tls import Certificates, base_link, is_tls, scheme, twin_link, twin_port


def mounted_paths():
    paths = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split(" ")
            sep = parts.index("-")
            paths[parts[4].replace("\\040", " ")] = parts[sep + 1]
    return paths


def wait_mounted(mnt, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if str(mnt) in mounted_paths():
            return
        time.sleep(0.02)
    raise BenchError(f"{mnt} did not appear as a mount within {timeout} s")


def fuse_server_pid(mnt):
    """The process that serves a mount: its command line names the mount point and it
    holds /dev/fuse open."""
    target = str(mnt).encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            if target not in argv:
                continue
            for fd in os.listdir(f"/proc/{entry}/fd"):
                if os.readlink(f"/proc/{entry}/fd/{fd}") == "/dev/fuse":
                    return int(entry)
        except OSError:
            continue
    return None


def vm_hwm_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise BenchError("no VmHWM")


def cpu_seconds(pid):
    """User + system CPU seconds a process has used (/proc/PID/stat, fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()     # from field 3 (state) on
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def child_pids(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(child) for child in f.read().split()]
    except OSError:
        return []


class Mount:
    def __init__(self, ctx, system, link, mnt, cache, pid, mount_seconds):
        self.ctx, self.system, self.link = ctx, system, link
        self.mnt, self.cache, self.pid, self.mount_seconds = mnt, cache, pid, mount_seconds

    def path(self, rel):
        return str(self.mnt / rel)

    def unmount(self):
        self.ctx.unmount(self.mnt, self.system, self.pid)


class Context:
    def __init__(self, args):
        self.args = args
        self.work = Path(args.work).resolve()
        self.rangefs = args.rangefs
        self.files = {}
        self.mounts = {}          # mountpoint -> (system, pid)
        self.servers = []         # Popen objects we started
        self.nginx = None         # the main nginx's Popen (start_servers)
        self.counter = 0
        self.can_drop = None
        self.notes = []
        # Each link and its https twin ("plain-tls"): the URL clients use and nginx's access log.
        self.links, self.logs = {}, {}
        for base, port in (("plain", PLAIN_PORT), ("slow", PROXY_PORT), ("stream", STREAM_PROXY_PORT)):
            for tls in (False, True):
                link = twin_link(base, tls)
                self.links[link] = f"{scheme(tls)}://127.0.0.1:{twin_port(port, tls)}"
                self.logs[link] = self.work / "nginx" / f"access-{link}.log"
        self.tls = Certificates(self.work / "tls")     # made by main once per run
        self.available = {}
        self.buckets = {}         # link -> set by start_bucket: endpoint, python, the big object's sha256
        self.sources = {}         # (webdav|subsonic|sftp, tls) -> its latency proxy's URL (sources.start)
                                  # (webdav|subsonic|sftp, "server") -> its server's port, once started
        self.tls_front = None     # the nginx in front of those servers' https twins
        self.ssh = None           # the sftp group's keys and known_hosts (sources.SshKeys), once sshd started
        # Set by main for each run of a group: RangeFS's --prefetch, and whether rclone, httpdirfs
        # and aria2c are measured (in the run with the defaults only).
        self.policy = "all"
        self.others = not args.skip_others
        self.load_at_start = " ".join(open("/proc/loadavg").read().split()[:3])
        self.started_at = time.strftime("%Y-%m-%d %H:%M %Z")
        self.source_commit = "commit not known"     # set by main as the run starts (report.source_commit)

    # -- helpers
    def url(self, link, rel):
        return f"{self.links[link]}/{rel}"

    def curl(self, link):
        """curl and the options every fetch of `link` takes: the run's CA for an https link."""
        return ["curl", "-sS", "--fail"] + (["--cacert", str(self.tls.ca)] if is_tls(link) else [])

    def nginx_cpu_seconds(self):
        """CPU seconds the main nginx's workers have used."""
        return sum(cpu_seconds(pid) for pid in child_pids(self.nginx.pid)) if self.nginx else 0.0

    def size(self, rel):
        return self.files[rel]["size"]

    def new_dir(self, kind, tag):
        self.counter += 1
        path = self.work / kind / f"{tag}-{self.counter}"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def drop_caches(self):
        if self.can_drop is False:
            return False
        os.sync()
        try:
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("3\n")
            self.can_drop = True
        except OSError:
            try:
                run(["sudo", "-n", "sh", "-c", "sync; echo 3 > /proc/sys/vm/drop_caches"], 60)
                self.can_drop = True
            except BenchError:
                self.can_drop = False
                self.notes.append("The page cache could not be dropped (not root, no sudo): "
                                  "'warm, page cache dropped' rows read from a hot cache.")
        return self.can_drop

    def manifest(self, link, name):
        return self.work / "manifests" / f"{link}-{name}.txt"

    # -- mounting
    def mount(self, system, link, prefetch=None, manifest="main", cache=None, listing=False, source=None,
              directory="", command=None):
        """`listing=True` mounts RangeFS on the web directory (nginx's autoindex) as rclone and
        httpdirfs always do, instead of on a manifest; `source` mounts RangeFS on that file. The
        link "bucket" mounts the S3 bucket that start_bucket put on moto's server. `directory`
        ("library/") mounts that directory of the web tree instead of its root. On an https link
        ("plain-tls", "bucket-tls") each system trusts the run's CA by its own option. `command(mnt, cache)`,
        when given, returns the mount command and its environment instead (the WebDAV, SFTP and Subsonic rows')."""
        if not self.available.get(system, False):
            raise BenchError(self.available.get(system + "_why", f"{system} is not installed"))
        mnt = self.new_dir("mnt", f"{system}-{link}")
        cache = Path(cache) if cache else self.new_dir("cache", f"{system}-{link}")
        cache.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        env = None
        web = self.links.get(link, "") + "/" + directory     # no web URL for the bucket
        if system == "rangefs":
            # The group run's policy (see main), unless the row is about one policy (the prefetcher's).
            prefetch = prefetch or self.policy
        trust = self.trust_options(system) if is_tls(link) and not command else []
        if command:
            cmd, env = command(mnt, cache)
        elif base_link(link) == "bucket":
            cmd, env = bucket_mount_command(self, system, link, mnt, cache, prefetch)
        elif system == "rangefs":
            source = str(source) if source else web if listing else str(self.manifest(link, manifest))
            cmd = [self.rangefs, "mount", source, str(mnt), "--cache-dir", str(cache), "--prefetch", prefetch] + trust
        elif system == "rclone":
            cmd = ["rclone", "mount", ":http:", str(mnt), "--http-url", web,
                   "--config", str(self.work / "rclone.conf"), "--read-only",
                   "--vfs-cache-mode", "full", "--cache-dir", str(cache),
                   "--daemon", "--log-file", str(cache / "rclone.log"), "--log-level", "NOTICE"] + trust
        else:
            cmd = ["httpdirfs", "--cache", "--cache-location", str(cache), "--no-range-check"] + trust + [web, str(mnt)]
        self.mounts[str(mnt)] = (system, None)
        # Output to a file, not a pipe: a daemon that keeps our pipe open would hang us.
        output = cache.parent / (cache.name + ".mount.log")
        with open(output, "wb") as out:
            result = run(cmd, 120, check=False, stdout=out, stderr=subprocess.STDOUT, env=env)
        if result.returncode != 0:
            raise BenchError(f"{system} mount exited {result.returncode}: "
                             f"{output.read_text(errors='replace').strip()[-300:]}")
        wait_mounted(mnt, 60)
        seconds = time.perf_counter() - start
        pid = None
        for _ in range(100):
            pid = fuse_server_pid(mnt)
            if pid:
                break
            time.sleep(0.05)
        self.mounts[str(mnt)] = (system, pid)
        return Mount(self, system, link, mnt, cache, pid, seconds)

    def trust_options(self, system):
        """How each system is told to trust the run's CA (and only through its own option: the
        system's trust store is left alone)."""
        option = {"rangefs": "--ca-file", "rclone": "--ca-cert", "httpdirfs": "--cacert"}[system]
        return [option, str(self.tls.ca)]

    def unmount(self, mnt, system, pid):
        mnt = str(mnt)
        if mnt in mounted_paths():
            try:
                if system == "rangefs":
                    run([self.rangefs, "unmount", mnt, "--timeout", "60"], 90)
                elif system == "davfs2":
                    run(["umount", mnt], 90)     # mount.davfs then writes its cache's index and exits
                else:
                    run(["fusermount3", "-u", mnt], 30)
            except BenchError as error:
                log(f"unmount {mnt}: {error}; detaching lazily")
                run(["fusermount3", "-u", "-z", mnt], 30, check=False)
        if pid and not wait_exit(pid, 60):
            log(f"{system} process {pid} still running after unmount; sending SIGTERM")
            os.kill(pid, signal.SIGTERM)
            if not wait_exit(pid, 10):
                os.kill(pid, signal.SIGKILL)
                wait_exit(pid, 10)
        self.mounts.pop(mnt, None)
        try:
            os.rmdir(mnt)
        except OSError:
            pass

    def cleanup(self):
        for mnt, (system, pid) in list(self.mounts.items()):
            try:
                self.unmount(mnt, system, pid)
            except BaseException as error:  # keep cleaning up
                log(f"cleanup: {mnt}: {error}")
                subprocess.run(["fusermount3", "-u", "-z", mnt], timeout=30, check=False)
        clear_stale_mounts(self.work)
        for proc in reversed(self.servers):
            stop_server(proc)
        self.servers.clear()


class mounted:
    """`with mounted(ctx, system, link, ...) as m:` mounts, and unmounts and removes the
    cache on the way out (keep_cache=True keeps it)."""

    def __init__(self, ctx, system, link, keep_cache=False, **kw):
        self.ctx, self.system, self.link, self.keep, self.kw = ctx, system, link, keep_cache, kw

    def __enter__(self):
        self.m = self.ctx.mount(self.system, self.link, **self.kw)
        return self.m

    def __exit__(self, *exc):
        self.m.unmount()
        if not self.keep:
            shutil.rmtree(self.m.cache, ignore_errors=True)
        return False


def clear_stale_mounts(work):
    for path in mounted_paths():
        if path.startswith(str(work) + "/"):
            subprocess.run(["fusermount3", "-u", "-z", path], timeout=30, check=False,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
