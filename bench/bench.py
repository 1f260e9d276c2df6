#!/usr/bin/env python3
"""RangeFS benchmark suite: RangeFS, the link (curl), the local disk, rclone, httpdirfs and aria2c.

Run it through bench/run.sh, which installs the tools and builds RangeFS first. It serves
bench/data/www with its own nginx on 127.0.0.1 (a plain port, and slow links: a TCP proxy
that adds latency and limits each connection's rate), measures every row, prints a table and
writes docs/benchmarks.md and docs/benchmarks.png. Every command runs under a timeout;
every mount and server it started is stopped on exit, also on failure or Ctrl-C.

Standard library only (matplotlib for the chart).
"""
import argparse
import hashlib
import http.client
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
DATA = BENCH / "data"
WWW = DATA / "www"
DOCS = ROOT / "docs"
MiB = 1 << 20
DATA_VERSION = "v1"

PLAIN_PORT, SLOW_PORT, PROXY_PORT = 18480, 18481, 18482
# The streaming link: nginx limited to about 4x the stream's bitrate, behind its own latency proxy.
STREAM_PORT, STREAM_PROXY_PORT = 18483, 18484
SYSTEMS = ("rangefs", "rclone", "httpdirfs")

BIG = "big/big512.bin"          # cold/warm sequential on the plain port, TTFB
MID = "big/big64.bin"           # fio random reads
SLOW_SEQ = "big/big16.bin"      # cold sequential on the slow link
PAR = {"plain": [f"par/p{i}.bin" for i in range(1, 5)], "slow": [f"parslow/s{i}.bin" for i in range(1, 5)]}
SONG, CLIP, WAV, FLAC = "media/song.mp3", "media/clip.mp3", "media/tone.wav", "media/noise.flac"
SPARSE = "sparse/zero4g.bin"
STREAM = "stream/song192.mp3"   # 10 min at 192 kb/s, made on first use (outside DATA_VERSION)
STREAM_BYTES_PER_SECOND = 24_000
TTFB_OFFSET = 400 * MiB
SEEK_FRAMES = 11484             # 300 s of MPEG-1 layer III frames at 44.1 kHz (38.28 per second)
MANY_FLAT, MANY_DIRS, MANY_PER_DIR = 20_000, 800, 100   # 100,000 entries
WEB_WIDE, WEB_DIRS, WEB_PER_DIR = 1_000, 100, 100     # web/wide: one directory; web/tree: 10,000 files
# The library rows: a music library of tagged MP3s with cover pictures, made on first use (outside
# DATA_VERSION; a new LIBRARY_VERSION makes it again): artists x albums x tracks, each track one of
# the encoded bodies (seconds, kb/s) muxed with its own tags.
LIBRARY, LIBRARY_VERSION = "library", "v1"
LIBRARY_ARTISTS = ("Aurora Lane", "The Bench Ensemble", "Kiln and Harbour", "Marta Okafor Trio", "Northbound Static")
LIBRARY_ALBUMS, LIBRARY_TRACKS = 2, 10          # 100 MP3s
LIBRARY_BODIES = ((130, 128), (165, 160), (200, 192), (215, 128), (180, 160), (240, 128))   # 2-5 MB each
LIBRARY_SCAN_TIMEOUT = 600      # s for one scan of the whole library
# rclone and httpdirfs fetch every file whole during a scan (about 2.5 min over the slow link):
# one run each, not --repeats, and a shorter limit.
LIBRARY_OTHERS_TIMEOUT = 300
# The bucket rows: moto's S3 server on loopback, its bucket holding web/wide's files under wide/
# and one 256 MiB object (made on first use, outside DATA_VERSION).
S3_PORT = 18485
BUCKET, BUCKET_WIDE, BUCKET_BIG, BUCKET_BIG_SIZE = "bench", "wide", "big/big256.bin", 256 * MiB
# The mirror rows: one file served by three nginx, one per port, each limited per connection.
MIRROR_PORTS = (18490, 18491, 18492)
MIRROR_ROOT = DATA / "mirrors"
MIRROR_FILE, MIRROR_SIZE, MIRROR_PIECE = "big256.bin", 256 * MiB, 4 * MiB
MIRROR_READ_TIMEOUT = 300       # s; one mirror alone serves the file in about 13 s


class BenchError(Exception):
    """A measurement that could not be made; the table shows n/a with this reason."""


class Interrupted(BaseException):
    pass


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


# ----------------------------------------------------------------------------- processes

def run(cmd, timeout, check=True, shell=False, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=None):
    """Runs a command in its own process group; kills the whole group on timeout."""
    proc = subprocess.Popen(cmd, shell=shell, stdout=stdout, stderr=stderr,
                            stdin=subprocess.DEVNULL, start_new_session=True, env=env)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        raise BenchError(f"timed out after {timeout:g} s: {short(cmd)}")
    except BaseException:
        kill_group(proc)
        raise
    out = out.decode(errors="replace") if isinstance(out, bytes) else (out or "")
    err = err.decode(errors="replace") if isinstance(err, bytes) else (err or "")
    if check and proc.returncode != 0:
        raise BenchError(f"{short(cmd)} exited {proc.returncode}: {err.strip()[-300:]}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def short(cmd):
    text = cmd if isinstance(cmd, str) else " ".join(str(c) for c in cmd)
    return text if len(text) < 160 else text[:157] + "..."


def timed(cmd, timeout, **kw):
    start = time.perf_counter()
    result = run(cmd, timeout, **kw)
    return time.perf_counter() - start, result


def median(values):
    return statistics.median(values)


def pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def wait_exit(pid, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.05)
    return not pid_alive(pid)


# ----------------------------------------------------------------------------- mounts

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
        self.counter = 0
        self.can_drop = None
        self.notes = []
        self.links = {"plain": f"http://127.0.0.1:{PLAIN_PORT}", "slow": f"http://127.0.0.1:{PROXY_PORT}",
                      "stream": f"http://127.0.0.1:{STREAM_PROXY_PORT}"}
        self.logs = {"plain": self.work / "nginx" / "access-plain.log",
                     "slow": self.work / "nginx" / "access-slow.log",
                     "stream": self.work / "nginx" / "access-stream.log"}
        self.available = {}
        self.bucket = None        # set by start_bucket: endpoint, python, the big object's sha256
        # Set by main for each run of a group: RangeFS's --prefetch, and whether rclone, httpdirfs
        # and aria2c are measured (in the run with the defaults only).
        self.policy = "all"
        self.others = not args.skip_others
        self.load_at_start = " ".join(open("/proc/loadavg").read().split()[:3])

    # -- helpers
    def url(self, link, rel):
        return f"{self.links[link]}/{rel}"

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
              directory=""):
        """`listing=True` mounts RangeFS on the web directory (nginx's autoindex) as rclone and
        httpdirfs always do, instead of on a manifest; `source` mounts RangeFS on that file. The
        link "bucket" mounts the S3 bucket that start_bucket put on moto's server. `directory`
        ("library/") mounts that directory of the web tree instead of its root."""
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
        if link == "bucket":
            cmd, env = bucket_mount_command(self, system, mnt, cache, prefetch)
        elif system == "rangefs":
            source = str(source) if source else web if listing else str(self.manifest(link, manifest))
            cmd = [self.rangefs, "mount", source, str(mnt), "--cache-dir", str(cache), "--prefetch", prefetch]
        elif system == "rclone":
            cmd = ["rclone", "mount", ":http:", str(mnt), "--http-url", web,
                   "--config", str(self.work / "rclone.conf"), "--read-only",
                   "--vfs-cache-mode", "full", "--cache-dir", str(cache),
                   "--daemon", "--log-file", str(cache / "rclone.log"), "--log-level", "NOTICE"]
        else:
            cmd = ["httpdirfs", "--cache", "--cache-location", str(cache), "--no-range-check",
                   web, str(mnt)]
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

    def unmount(self, mnt, system, pid):
        mnt = str(mnt)
        if mnt in mounted_paths():
            try:
                if system == "rangefs":
                    run([self.rangefs, "unmount", mnt, "--timeout", "60"], 90)
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
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)
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


# ----------------------------------------------------------------------------- data

def sha256_file(path, timeout=600):
    out = run(["openssl", "dgst", "-sha256", "-r", str(path)], timeout).stdout
    return out.split()[0]


def generate_data():
    marker = DATA / f".complete-{DATA_VERSION}"
    index = DATA / "files.json"
    if marker.exists() and index.exists():
        return json.loads(index.read_text())
    log("generating benchmark data in bench/data (once)")
    if DATA.exists():
        shutil.rmtree(DATA)
    for sub in ("big", "par", "parslow", "small", "media", "sparse", "many/flat"):
        (WWW / sub).mkdir(parents=True, exist_ok=True)

    def random_file(rel, size):
        with open(WWW / rel, "wb") as f:
            left = size
            while left:
                n = min(left, 4 * MiB)
                f.write(os.urandom(n))
                left -= n

    random_file(BIG, 512 * MiB)
    random_file(MID, 64 * MiB)
    random_file(SLOW_SEQ, 16 * MiB)
    for rel in PAR["plain"]:
        random_file(rel, 64 * MiB)
    for rel in PAR["slow"]:
        random_file(rel, 16 * MiB)
    rng = random.Random(5)
    for i in range(100):
        random_file(f"small/f{i:03d}.bin", rng.randint(1024, 256 * 1024))
    ff = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y"]
    run(ff + ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=600", "-ac", "2",
              "-c:a", "libmp3lame", "-b:a", "128k", "-metadata", "title=RangeFS bench song",
              str(WWW / SONG)], 600)
    run(ff + ["-f", "lavfi", "-i", "sine=frequency=660:sample_rate=44100:duration=120", "-ac", "2",
              "-c:a", "libmp3lame", "-b:a", "192k", "-metadata", "title=RangeFS bench clip",
              str(WWW / CLIP)], 600)
    run(["sox", "-n", "-r", "44100", "-c", "2", "-b", "16", str(WWW / WAV),
         "synth", "60", "sine", "440", "sine", "660"], 300)
    run(["sox", "-n", "-r", "44100", "-c", "2", "-b", "16", str(WWW / FLAC),
         "synth", "60", "pinknoise"], 300)
    with open(WWW / SPARSE, "wb") as f:
        f.truncate(4096 * MiB)
    files = {}
    for path in sorted(WWW.rglob("*")):
        if path.is_file() and "many" not in path.parts:
            rel = str(path.relative_to(WWW))
            files[rel] = {"size": path.stat().st_size, "sha256": sha256_file(path)}
    # 100,000 names for the big manifest: hard links to the 100 small files.
    for i in range(MANY_FLAT):
        os.link(WWW / f"small/f{i % 100:03d}.bin", WWW / f"many/flat/f{i:05d}.bin")
    for d in range(MANY_DIRS):
        (WWW / f"many/d{d:03d}").mkdir()
        for j in range(MANY_PER_DIR):
            os.link(WWW / f"small/f{j:03d}.bin", WWW / f"many/d{d:03d}/f{j:03d}.bin")
    index.write_text(json.dumps(files, indent=1))
    marker.write_text("ok\n")
    os.system(f"chmod -R a+rX {DATA}")
    return files


def ensure_web_tree():
    """The web directory rows' trees (hard links to the small files), made the first time
    they are missing: web/wide holds 1,000 files, web/tree 100 directories of 100."""
    marker = WWW / "web" / ".complete"
    if marker.exists():
        return
    log("generating web/ (once)")
    shutil.rmtree(WWW / "web", ignore_errors=True)
    (WWW / "web" / "wide").mkdir(parents=True)
    for i in range(WEB_WIDE):
        os.link(WWW / f"small/f{i % 100:03d}.bin", WWW / f"web/wide/f{i:04d}.bin")
    for d in range(WEB_DIRS):
        (WWW / f"web/tree/d{d:02d}").mkdir(parents=True)
        for j in range(WEB_PER_DIR):
            os.link(WWW / f"small/f{j:03d}.bin", WWW / f"web/tree/d{d:02d}/f{j:02d}.bin")
    os.system(f"chmod -R a+rX {WWW / 'web'}")
    marker.write_text("ok\n")


def id3v1_tag(title, artist, album, year, comment, track, genre):
    """An ID3v1.1 tag: the last 128 bytes of a file."""
    def text(value, size):
        return value.encode("latin-1")[:size].ljust(size, b"\0")
    tag = (b"TAG" + text(title, 30) + text(artist, 30) + text(album, 30) + text(str(year), 4)
           + text(comment, 28) + b"\0" + bytes([track, genre]))
    assert len(tag) == 128
    return tag


def ensure_library():
    """The library rows' music library, made the first time it is missing: per artist and album
    a directory of MP3s of 2-4 min at 128-192 kb/s, each with an ID3v2.3 tag (title, artist, album,
    track) and its album's cover picture (APIC, a JPEG of 40-70 KiB). Every third track also ends
    in an ID3v1.1 tag whose year, comment and genre its ID3v2 tag lacks: a tag reader that shows
    them has read the file's tail. A few bodies are encoded once and muxed with -c copy."""
    root = WWW / LIBRARY
    marker = root / f".complete-{LIBRARY_VERSION}"
    if marker.exists():
        return
    log(f"generating {LIBRARY}/ (once)")
    shutil.rmtree(root, ignore_errors=True)
    ff = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y"]
    words = ("Second", "Quiet", "Paper", "Salt", "Late", "Glass", "Open", "Winter", "Copper", "Hollow",
             "Light", "Rooms", "Harbour", "Signals", "Orchard", "Weather", "Rivers", "Engines", "Gardens", "Letters")
    rng = random.Random(11)
    with tempfile.TemporaryDirectory(dir=DATA) as tmp:
        bodies = []
        for i, (seconds, kbps) in enumerate(LIBRARY_BODIES):
            bodies.append(Path(tmp) / f"body{i}.mp3")
            run(ff + ["-f", "lavfi", "-i", f"anoisesrc=color=pink:sample_rate=44100:duration={seconds}:seed={i + 1}",
                      "-ac", "2", "-c:a", "libmp3lame", "-b:a", f"{kbps}k", str(bodies[-1])], 300)
        index = 0
        for a, artist in enumerate(LIBRARY_ARTISTS):
            for b in range(LIBRARY_ALBUMS):
                album = " ".join(rng.sample(words, 2))
                number = a * LIBRARY_ALBUMS + b
                cover = Path(tmp) / f"cover{number}.jpg"
                side = 480 + 40 * (number % 5)
                run(ff + ["-f", "lavfi", "-i", f"testsrc2=size={side}x{side}:rate=1", "-frames:v", "1",
                          "-vf", f"noise=alls=12:allf=u:all_seed={number}", "-q:v", "3", str(cover)], 60)
                folder = root / artist / album
                folder.mkdir(parents=True)
                for track in range(1, LIBRARY_TRACKS + 1):
                    title = " ".join(rng.sample(words, rng.choice((1, 2, 3))))
                    path = folder / f"{track:02d} {title}.mp3"
                    run(ff + ["-i", str(bodies[index % len(bodies)]), "-i", str(cover), "-map", "0:a", "-map", "1",
                              "-c", "copy", "-id3v2_version", "3", "-metadata", f"title={title}",
                              "-metadata", f"artist={artist}", "-metadata", f"album={album}",
                              "-metadata", f"track={track}/{LIBRARY_TRACKS}", "-metadata:s:v", "title=Album cover",
                              "-metadata:s:v", "comment=Cover (front)", str(path)], 120)
                    if index % 3 == 0:
                        with open(path, "ab") as f:
                            f.write(id3v1_tag(title, artist, album, 1990 + number, "ID3v1 only", track, 52))
                    index += 1
    run(["chmod", "-R", "a+rX", str(root)], 60)
    marker.write_text("ok\n")


def ensure_stream_file(files):
    """The streaming row's MP3 (192 kb/s, 10 min), generated the first time it is missing."""
    path = WWW / STREAM
    if STREAM not in files or not path.exists():
        log(f"generating {STREAM} (once)")
        path.parent.mkdir(parents=True, exist_ok=True)
        run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y", "-f", "lavfi",
             "-i", "anoisesrc=color=pink:sample_rate=44100:duration=600:seed=7", "-ac", "2",
             "-c:a", "libmp3lame", "-b:a", "192k", "-metadata", "title=RangeFS bench stream", str(path)], 600)
        os.chmod(path, 0o644)
        os.chmod(path.parent, 0o755)
        files[STREAM] = {"size": path.stat().st_size, "sha256": sha256_file(path)}
        (DATA / "files.json").write_text(json.dumps(files, indent=1))
    return files


def write_manifests(ctx):
    (ctx.work / "manifests").mkdir(parents=True, exist_ok=True)
    (ctx.work / "rclone.conf").touch()
    for link, base in ctx.links.items():
        main = [rel for rel in ctx.files]
        collection = [rel for rel in ctx.files if rel.startswith(("media/", "small/"))]
        for name, rels in (("main", main), ("collection", collection)):
            ctx.manifest(link, name).write_text("".join(f"{rel}\t{base}/{rel}\n" for rel in rels))
        many = [f"many/flat/f{i:05d}.bin" for i in range(MANY_FLAT)]
        many += [f"many/d{d:03d}/f{j:03d}.bin" for d in range(MANY_DIRS) for j in range(MANY_PER_DIR)]
        ctx.manifest(link, "many").write_text("".join(f"{rel}\t{base}/{rel}\n" for rel in many))


# ----------------------------------------------------------------------------- servers

def port_open(port):
    import socket
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def wait_port(port, proc, what, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if port_open(port):
            return
        if proc.poll() is not None:
            raise BenchError(f"{what} exited with {proc.returncode}")
        time.sleep(0.05)
    raise BenchError(f"{what} did not listen on {port}")


def start_servers(ctx):
    for port in (PLAIN_PORT, SLOW_PORT, PROXY_PORT, STREAM_PORT, STREAM_PROXY_PORT):
        if port_open(port):
            raise BenchError(f"something already listens on 127.0.0.1:{port}")
    ngx = ctx.work / "nginx"
    (ngx / "tmp").mkdir(parents=True, exist_ok=True)
    user = "user root;" if os.getuid() == 0 else ""
    server = """
    server {{
        listen 127.0.0.1:{port};
        root {root};
        autoindex on;
        {extra}
        access_log {log} bench;
    }}"""
    conf = f"""daemon off;
worker_processes 1;
{user}
pid {ngx}/nginx.pid;
error_log {ngx}/error.log;
events {{ worker_connections 1024; }}
http {{
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    log_format bench '$request_method\\t$uri\\t$status\\t$body_bytes_sent\\t$http_range';
    client_body_temp_path {ngx}/tmp/body;
    proxy_temp_path {ngx}/tmp/proxy;
    fastcgi_temp_path {ngx}/tmp/fastcgi;
    uwsgi_temp_path {ngx}/tmp/uwsgi;
    scgi_temp_path {ngx}/tmp/scgi;
{server.format(port=PLAIN_PORT, root=WWW, extra="", log=ctx.logs["plain"])}
{server.format(port=SLOW_PORT, root=WWW, extra="", log=ctx.logs["slow"])}
{server.format(port=STREAM_PORT, root=WWW, extra="", log=ctx.logs["stream"])}
}}
"""
    (ngx / "nginx.conf").write_text(conf)
    nginx = subprocess.Popen(["/usr/sbin/nginx", "-c", str(ngx / "nginx.conf"), "-p", str(ngx) + "/",
                              "-e", str(ngx / "error.log")], start_new_session=True,
                             stdin=subprocess.DEVNULL)
    ctx.servers.append(nginx)
    wait_port(PLAIN_PORT, nginx, "nginx")
    wait_port(SLOW_PORT, nginx, "nginx")
    wait_port(STREAM_PORT, nginx, "nginx")
    # The proxies limit each connection (nginx's limit_rate would let every request's first
    # second through at once, which short requests on one connection turn into far more).
    for listen, upstream, rate in ((PROXY_PORT, SLOW_PORT, ctx.args.rate),
                                   (STREAM_PROXY_PORT, STREAM_PORT, ctx.args.stream_rate)):
        proxy = subprocess.Popen([sys.executable, str(BENCH / "latency_proxy.py"),
                                  "--listen", f"127.0.0.1:{listen}", "--upstream", f"127.0.0.1:{upstream}",
                                  "--rtt-ms", str(ctx.args.rtt_ms), "--rate", str(rate_bytes(rate))],
                                 start_new_session=True,
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        ctx.servers.append(proxy)
        wait_port(listen, proxy, "latency proxy")
    write_server_pids(ctx)


def rate_bytes(text):
    """Bytes per second of a rate written as nginx writes it: 96k, 2m, 500000."""
    units = {"k": 1024, "m": 1024 * 1024}
    text = str(text).strip().lower()
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def rate_text(text):
    """A rate written as nginx writes it, for people: 2m -> 2 MiB/s, 96k -> 96 KiB/s."""
    text = str(text).strip().lower()
    names = {"k": "KiB/s", "m": "MiB/s"}
    return f"{text[:-1]} {names[text[-1]]}" if text and text[-1] in names else f"{text} B/s"


class LogMark:
    """Bytes nginx sent for one URI path after this mark (read amplification)."""

    def __init__(self, ctx, link):
        self.path = ctx.logs[link]
        self.offset = self.path.stat().st_size if self.path.exists() else 0

    def requests(self):
        """Requests nginx logged after this mark."""
        time.sleep(0.5)   # nginx logs a request when it ends
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            return len(f.read().splitlines())

    def bytes_sent(self, uri_path):
        time.sleep(0.5)   # nginx logs a request when it ends; connections have just closed
        total = 0
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            for line in f.read().decode(errors="replace").splitlines():
                parts = line.split("\t")
                if len(parts) >= 4 and parts[1] == "/" + uri_path:
                    total += int(parts[3])
        return total

    @staticmethod
    def settle(ctx, link, quiet=1.0, timeout=20):
        """Waits until the link's log has not grown for `quiet` seconds: a request that a client
        dropped is logged only when nginx next tries to send on it."""
        path = ctx.logs[link]
        deadline = time.monotonic() + timeout
        size, since = -1, time.monotonic()
        while time.monotonic() < deadline:
            now = path.stat().st_size if path.exists() else 0
            if now != size:
                size, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet:
                return
            time.sleep(0.1)

    def traffic(self, ctx, link, prefix):
        """Bytes nginx sent for the URI paths under `prefix` after this mark, and the number of
        those requests, once the log has settled."""
        LogMark.settle(ctx, link)
        total = count = 0
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            for line in f.read().decode(errors="replace").splitlines():
                parts = line.split("\t")
                if len(parts) >= 4 and parts[1].startswith("/" + prefix):
                    total += int(parts[3])
                    count += 1
        return total, count


# ----------------------------------------------------------------------------- results

class Row:
    def __init__(self, rid, label, unit, better, baseline_label, link="plain", target=None,
                 target_text="", note=""):
        self.rid, self.label, self.unit, self.better = rid, label, unit, better
        self.baseline_label, self.link = baseline_label, link
        self.target, self.target_text, self.note = target, target_text, note
        self.base_note = note     # what the row measures; a run appends what it saw
        self.values = {}      # "baseline"/system ("rangefs-none": the run with --prefetch none) -> float or "n/a: reason"

    def ratio(self):
        r, b = self.values.get("rangefs"), self.values.get("baseline")
        if isinstance(r, (int, float)) and isinstance(b, (int, float)) and b > 0:
            return r / b
        return None

    def met(self):
        ratio = self.ratio()
        if self.target is None:
            return None
        kind, limit = self.target
        value = self.values.get("rangefs")
        if kind == "ratio>=":
            return None if ratio is None else ratio >= limit
        if kind == "ratio<=":
            return None if ratio is None else ratio <= limit
        if kind == "abs<=":
            return None if not isinstance(value, (int, float)) else value <= limit
        return None

    def background_cost(self):
        """How much worse RangeFS's defaults (--prefetch all) did than --prefetch none, as a fraction
        of the latter (negative: better), for rows that time or rate what a program waits for."""
        a, b = self.values.get("rangefs"), self.values.get(NONE_KEY)
        if self.unit not in FOREGROUND_UNITS or not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
            return None
        if a <= 0 or b <= 0 or self.unit == "ms" and max(a, b) < 1:
            return None     # under a millisecond (the streaming row's worst read) the difference is noise
        return a / b - 1 if self.better == "lower" else b / a - 1

    def ahead(self):
        r = self.values.get("rangefs")
        if not isinstance(r, (int, float)):
            return None
        others = [self.values.get(s) for s in OTHER_TOOLS]
        others = [o for o in others if isinstance(o, (int, float))]
        if not others:
            return None
        return all(r >= o for o in others) if self.better == "higher" else all(r <= o for o in others)

    def to_json(self):
        return {"id": self.rid, "label": self.label, "unit": self.unit, "better": self.better,
                "link": self.link, "baseline": self.baseline_label, "target": self.target_text,
                "values": self.values, "ratio": self.ratio(), "met": self.met(), "ahead": self.ahead(),
                "note": self.note, "rule": self.target}

    @classmethod
    def from_json(cls, d):
        row = cls(d["id"], d["label"], d["unit"], d["better"], d["baseline"], d["link"],
                  tuple(d["rule"]) if d.get("rule") else None, d["target"], d["note"])
        row.values = d["values"]
        return row


# The RangeFS figures of a group's run with --prefetch none go beside those of its run with the
# defaults (all).
NONE_KEY = "rangefs-none"
# Rows whose figure is what a program waits for; "within 5 % of --prefetch none" is asked of these.
FOREGROUND_UNITS = ("s", "ms", "MB/s", "IOPS")
BACKGROUND_COST_LIMIT = 0.05


def merge_none_policy(rows, second):
    """Puts the RangeFS figure of each row that a group's run with --prefetch none measured beside
    the defaults' figure of the same row, and what that run noted about RangeFS in the row's note."""
    by_id = {row.rid: row for row in second}
    for row in rows:
        other = by_id.get(row.rid)
        if other is None or "rangefs" not in other.values:
            continue
        row.values[NONE_KEY] = other.values["rangefs"]
        seen = other.note[len(other.base_note):].strip() if other.note.startswith(other.base_note) else other.note
        if seen:
            row.note += f" With --prefetch none: {seen}"


def fmt(value, unit=""):
    if isinstance(value, str):
        return value
    if value is None:
        return "—"
    a = abs(value)
    if a >= 100:
        text = f"{value:,.0f}"
    elif a >= 10:
        text = f"{value:.1f}"
    elif a >= 1:
        text = f"{value:.2f}"
    else:
        text = f"{value:.3g}"
    return text


def measure_cell(row, key, fn):
    """Runs one cell's measurement; a failure becomes "n/a: reason" and the run goes on."""
    try:
        row.values[key] = fn()
        log(f"  {row.rid} [{key}] = {fmt(row.values[key])} {row.unit}")
    except BenchError as error:
        row.values[key] = f"n/a: {error}"
        log(f"  {row.rid} [{key}] n/a: {error}")


def na_others(row, reason):
    for system in ("rclone", "httpdirfs"):
        row.values[system] = f"n/a: {reason}"


# ----------------------------------------------------------------------------- primitives

def read_all(path, expected_size, timeout=600):
    """Seconds to read a file to /dev/null with 1 MiB reads (dd)."""
    seconds, result = timed(["dd", f"if={path}", "of=/dev/null", "bs=1M"], timeout)
    match = re.search(r"^(\d+) bytes", result.stderr, re.M)
    got = int(match.group(1)) if match else -1
    if got != expected_size:
        raise BenchError(f"read {got} bytes of {path}, expected {expected_size}")
    return seconds


def verify(ctx, path, rel, timeout=600):
    digest = sha256_file(path, timeout)
    if digest != ctx.files[rel]["sha256"]:
        raise BenchError(f"WRONG BYTES: sha256 of {path} differs from the original")


def curl_seconds(ctx, link, rel, timeout=600):
    seconds, result = timed(["curl", "-sS", "--fail", "-o", "/dev/null", "-w", "%{size_download}",
                             ctx.url(link, rel)], timeout)
    if int(float(result.stdout.strip() or 0)) != ctx.size(rel):
        raise BenchError(f"curl fetched {result.stdout} bytes of {rel}")
    return seconds


def curl_verify(ctx, link, rel, timeout=600):
    out = run(f"curl -sS --fail '{ctx.url(link, rel)}' | openssl dgst -sha256 -r", timeout, shell=True).stdout
    if out.split()[0] != ctx.files[rel]["sha256"]:
        raise BenchError(f"curl of {rel} returned wrong bytes")


def timed_pread(path, offset, length, timeout):
    """stat + open + pread in a thread, so a hung read cannot hang the benchmark."""
    result = {}

    def work():
        try:
            start = time.perf_counter()
            os.stat(path)
            result["stat"] = time.perf_counter() - start
            fd = os.open(path, os.O_RDONLY)
            try:
                data = os.pread(fd, length, offset)
            finally:
                os.close(fd)
            result["seconds"] = time.perf_counter() - start
            result["data"] = data
        except OSError as error:
            result["error"] = error

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise BenchError(f"read of {path} did not return within {timeout} s")
    if "error" in result:
        raise BenchError(f"read of {path}: {result['error']}")
    return result["seconds"], result["data"], result["stat"]


def original_bytes(rel, offset, length):
    with open(WWW / rel, "rb") as f:
        f.seek(offset)
        return f.read(length)


def rangefs_data_file(mount, rel):
    """The cache's own data file for a path of a RangeFS mount (complete or partial)."""
    db = mount.cache / "metadata.sqlite"
    url = mount.ctx.url(mount.link, rel)
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
        try:
            row = con.execute("select dataName from cached_file where url = ?", (url,)).fetchone()
        finally:
            con.close()
    except sqlite3.Error as error:
        raise BenchError(f"cannot read {db}: {error}")
    if not row:
        raise BenchError(f"{url} is not in the cache database")
    for candidate in (mount.cache / "data" / row[0], mount.cache / "data" / (row[0] + ".part")):
        if candidate.exists():
            return candidate
    raise BenchError(f"no data file for {rel} in {mount.cache}")


def fio(path, bs, runtime=None, number_ios=None, direct=1, timeout=None):
    cmd = ["fio", "--name=bench", f"--filename={path}", "--readonly", "--rw=randread", f"--bs={bs}",
           "--ioengine=psync", f"--direct={direct}", "--invalidate=0", "--randseed=42",
           "--output-format=json"]
    if runtime:
        cmd += ["--time_based", f"--runtime={runtime}s"]
    if number_ios:
        cmd += [f"--number_ios={number_ios}"]
    result = run(cmd, timeout or (runtime or 0) + 120, check=False)
    if result.returncode != 0:
        raise BenchError(f"fio exited {result.returncode}: {(result.stderr or result.stdout).strip()[-200:]}")
    job = json.loads(result.stdout[result.stdout.index("{"):])["jobs"][0]["read"]
    return {"iops": job["iops"], "bytes": job["io_bytes"], "seconds": job["runtime"] / 1000}


def fio_with_fallback(path, bs, **kw):
    """fio with --direct=1; FUSE may refuse O_DIRECT, then --direct=0 (noted)."""
    try:
        return fio(path, bs, direct=1, **kw), 1
    except BenchError as error:
        if "Invalid argument" not in str(error) and "direct" not in str(error).lower():
            raise
        return fio(path, bs, direct=0, **kw), 0


def http_random_reads(url, size, bs, seconds):
    """The link's figure for random reads: one keep-alive connection, one Range GET of
    `bs` bytes at a random aligned offset at a time (what a psync job asks for)."""
    host, _, rest = url[len("http://"):].partition("/")
    h, _, p = host.partition(":")
    rng = random.Random(42)
    conn = http.client.HTTPConnection(h, int(p), timeout=30)
    count = 0
    deadline = time.perf_counter() + seconds
    start = time.perf_counter()
    try:
        while time.perf_counter() < deadline:
            off = rng.randrange(size // bs) * bs
            conn.request("GET", "/" + rest, headers={"Range": f"bytes={off}-{off + bs - 1}"})
            response = conn.getresponse()
            body = response.read()
            if response.status != 206 or len(body) != bs:
                raise BenchError(f"range request answered {response.status} with {len(body)} bytes")
            count += 1
    except (OSError, http.client.HTTPException) as error:
        raise BenchError(f"range requests failed: {error}")
    finally:
        conn.close()
    return count / (time.perf_counter() - start)


# ----------------------------------------------------------------------------- rows

def systems(ctx):
    return [s for s in SYSTEMS if s == "rangefs" or ctx.others]


def row_cold_sequential(ctx, link):
    rel = BIG if link == "plain" else SLOW_SEQ
    mib = ctx.size(rel) // MiB
    row = Row(f"cold-seq-{link}", f"Cold sequential read, {mib} MiB ({link})", "MB/s", "higher",
              "curl -o /dev/null", link, ("ratio>=", 0.90), "≥ 0.90× curl")
    n = ctx.args.repeats

    def baseline():
        times = [curl_seconds(ctx, link, rel) for _ in range(n)]
        curl_verify(ctx, link, rel)
        return ctx.size(rel) / median(times) / 1e6

    def system(name):
        def measure():
            times = []
            for _ in range(n):
                with mounted(ctx, name, link) as m:
                    times.append(read_all(m.path(rel), ctx.size(rel)))
                    verify(ctx, m.path(rel), rel)
            return ctx.size(rel) / median(times) / 1e6
        return measure

    measure_cell(row, "baseline", baseline)
    for name in systems(ctx):
        measure_cell(row, name, system(name))
    return [row]


def rows_warm(ctx):
    """Warm re-read on the same mount (page cache dropped, and hot), and after a remount."""
    rel, size, n = BIG, ctx.size(BIG), ctx.args.repeats
    dropped = Row("warm-dropped", "Warm re-read, same mount, page cache dropped, 512 MiB", "MB/s",
                  "higher", "local read of the cache file (dropped)", "plain", ("ratio>=", 0.90),
                  "≥ 0.90× disk")
    hot = Row("warm-hot", "Warm re-read, same mount, page cache hot, 512 MiB", "MB/s", "higher",
              "local read of the cache file (hot)", "plain", ("ratio>=", 0.90), "≥ 0.90× local")
    remount = Row("remount", "Re-read after remount, cache kept (page cache dropped), 512 MiB", "MB/s",
                  "higher", "local read of the cache file (dropped)", "plain", ("ratio>=", 0.90),
                  "≥ 0.90× disk")
    rows = [dropped, hot, remount]
    disk_file = {}

    for name in systems(ctx):
        def measure(name=name):
            m = ctx.mount(name, "plain")
            try:
                read_all(m.path(rel), size)           # fill the cache
                verify(ctx, m.path(rel), rel)
                t_drop, t_hot = [], []
                for _ in range(n):
                    ctx.drop_caches()
                    t_drop.append(read_all(m.path(rel), size))
                verify(ctx, m.path(rel), rel)
                read_all(m.path(rel), size)
                for _ in range(n):
                    t_hot.append(read_all(m.path(rel), size))
                if name == "rangefs":
                    disk_file["path"] = rangefs_data_file(m, rel)
                    disk_file["baseline"] = measure_disk(ctx, disk_file["path"], size, n)
            finally:
                m.unmount()
            t_remount = []
            try:
                for _ in range(n):
                    ctx.drop_caches()
                    m2 = ctx.mount(name, "plain", cache=m.cache)
                    try:
                        mark = LogMark(ctx, "plain")
                        t_remount.append(read_all(m2.path(rel), size))
                        verify(ctx, m2.path(rel), rel)
                    finally:
                        m2.unmount()
                    fetched = mark.bytes_sent(rel)
                    if fetched:
                        remount.note += f" {name} fetched {fetched / MiB:.1f} MiB again after a remount."
            finally:
                shutil.rmtree(m.cache, ignore_errors=True)
            return size / median(t_drop) / 1e6, size / median(t_hot) / 1e6, size / median(t_remount) / 1e6

        try:
            a, b, c = measure()
            dropped.values[name], hot.values[name], remount.values[name] = a, b, c
            log(f"  warm [{name}] dropped {a:.0f} hot {b:.0f} remount {c:.0f} MB/s")
        except BenchError as error:
            for row in rows:
                row.values[name] = f"n/a: {error}"
            log(f"  warm [{name}] n/a: {error}")

    if "baseline" in disk_file:
        d, h = disk_file["baseline"]
        dropped.values["baseline"], hot.values["baseline"], remount.values["baseline"] = d, h, d
    else:
        for row in rows:
            row.values["baseline"] = "n/a: no RangeFS cache file to read"
    if not ctx.can_drop:
        for row in (dropped, remount):
            row.note += " Page cache could not be dropped."
    return rows


def measure_disk(ctx, path, size, n):
    """Reads the cache's own data file from local disk: page cache dropped, and hot."""
    dropped = []
    for _ in range(n):
        ctx.drop_caches()
        dropped.append(read_all(path, size))
    read_all(path, size)
    hot = [read_all(path, size) for _ in range(n)]
    return size / median(dropped) / 1e6, size / median(hot) / 1e6


def row_ttfb(ctx, link):
    rel, n = BIG, ctx.args.repeats
    row = Row(f"ttfb-{link}", f"First 4 KiB at offset 400 MiB of a cold file ({link})", "ms", "lower",
              "curl -r (one 4 KiB range request)", link, ("ratio<=", 1.5), "≤ 1.5× curl -r",
              note="stat + open + pread(4 KiB) right after a fresh mount with an empty cache.")
    expected = original_bytes(rel, TTFB_OFFSET, 4096)
    out = ctx.work / "ttfb.out"

    def baseline():
        times = []
        for _ in range(n):
            result = run(["curl", "-sS", "--fail", "-r", f"{TTFB_OFFSET}-{TTFB_OFFSET + 4095}", "-o", str(out),
                          "-w", "%{time_total}", ctx.url(link, rel)], 60)
            if out.read_bytes() != expected:
                raise BenchError("curl -r returned wrong bytes")
            times.append(float(result.stdout))
        return median(times) * 1000

    def system(name):
        def measure():
            times, stats = [], []
            for _ in range(n):
                with mounted(ctx, name, link) as m:
                    seconds, data, stat_seconds = timed_pread(m.path(rel), TTFB_OFFSET, 4096, 120)
                    if data != expected:
                        raise BenchError("WRONG BYTES at offset 400 MiB")
                    times.append(seconds)
                    stats.append(stat_seconds)
            row.note += f" {name}: stat {median(stats) * 1000:.1f} ms of it."
            return median(times) * 1000
        return measure

    measure_cell(row, "baseline", baseline)
    for name in systems(ctx):
        measure_cell(row, name, system(name))
    return [row]


def rows_fio(ctx):
    rel, size, runtime = MID, ctx.size(MID), ctx.args.fio_runtime
    rows = []
    for bs in ("4k", "128k"):
        bs_bytes = 4096 if bs == "4k" else 131072
        cold = Row(f"fio-{bs}-cold", f"fio randread {bs} psync, cold, {runtime} s over 64 MiB", "IOPS",
                   "higher", "Range GETs, 1 keep-alive connection", "plain")
        amp = Row(f"fio-{bs}-amp", f"  bytes from server ÷ bytes read (cold {bs}, {runtime} s)", "×",
                  "lower", "exact ranges", "plain",
                  ("abs<=", 2.0) if bs == "4k" else None, "≤ 2×" if bs == "4k" else "")
        warm = Row(f"fio-{bs}-warm", f"fio randread {bs} psync, warm, {runtime} s", "IOPS", "higher",
                   "fio on the local cache file", "plain")
        rows += [cold, amp, warm]
        amp.values["baseline"] = 1.0
        measure_cell(cold, "baseline", lambda: http_random_reads(ctx.url("plain", rel), size, bs_bytes, runtime))
        disk_path = {}
        for name in systems(ctx):
            try:
                with mounted(ctx, name, "plain") as m:
                    mark = LogMark(ctx, "plain")
                    result, direct = fio_with_fallback(m.path(rel), bs, runtime=runtime)
                sent = mark.bytes_sent(rel)
                cold.values[name] = result["iops"]
                amp.values[name] = sent / max(result["bytes"], 1)
                if not direct:
                    cold.note += f" {name}: O_DIRECT refused, ran with --direct=0 (fresh mount, cold page cache)."
                log(f"  {cold.rid} [{name}] {result['iops']:.0f} IOPS, server sent {sent / MiB:.1f} MiB "
                    f"for {result['bytes'] / MiB:.1f} MiB read")
            except BenchError as error:
                cold.values[name] = amp.values[name] = f"n/a: {error}"
                log(f"  {cold.rid} [{name}] n/a: {error}")

            def measure_warm(name=name):
                with mounted(ctx, name, "plain") as m:
                    read_all(m.path(rel), size)
                    verify(ctx, m.path(rel), rel)
                    if name == "rangefs":
                        disk_path["path"] = rangefs_data_file(m, rel)
                        disk_path["iops"] = fio(disk_path["path"], bs, runtime=runtime, direct=1)["iops"]
                    mark = LogMark(ctx, "plain")
                    result, direct = fio_with_fallback(m.path(rel), bs, runtime=runtime)
                    if not direct:
                        warm.note += f" {name}: O_DIRECT refused, ran with --direct=0 (page cache may serve)."
                sent = mark.bytes_sent(rel)
                if sent:
                    warm.note += f" {name} fetched {sent / MiB:.1f} MiB during the warm run."
                return result["iops"]
            measure_cell(warm, name, measure_warm)
        warm.values["baseline"] = disk_path.get("iops", "n/a: no RangeFS cache file")
    rows += row_sparse_amplification(ctx)
    return rows


def row_sparse_amplification(ctx):
    rel, ios = BIG, 2000
    row = Row("fio-4k-sparse-amp", f"  bytes from server ÷ bytes read ({ios} × 4 KiB at random in 512 MiB, cold)",
              "×", "lower", "exact ranges", "plain", ("abs<=", 2.0), "≤ 2×",
              note=f"fio --number_ios={ios}: each read lands in a different block, so this shows over-fetch "
                   "per miss, which a 10 s run over 64 MiB hides once the whole file is cached.")
    row.values["baseline"] = 1.0
    for name in systems(ctx):
        def measure(name=name):
            with mounted(ctx, name, "plain") as m:
                mark = LogMark(ctx, "plain")
                result, _ = fio_with_fallback(m.path(rel), "4k", number_ios=ios, timeout=300)
            return mark.bytes_sent(rel) / max(result["bytes"], 1)
        measure_cell(row, name, measure)
    return [row]


def local_run(cmd, timeout=300):
    return run(cmd, timeout).stdout


def rows_media(ctx, link):
    n = ctx.args.repeats
    rows = []
    probe = ["ffprobe", "-v", "error", "-show_entries", "format=duration,bit_rate:format_tags=title", "-of", "json"]
    expected_probe = json.loads(local_run(probe + [str(WWW / SONG)]))

    def check_probe(out):
        if json.loads(out) != expected_probe:
            raise BenchError("ffprobe saw different metadata than on the original")

    sox_expected = run(["sox", str(WWW / WAV), "-n", "stat"], 120).stderr

    def check_sox(err):
        keep = lambda text: [l for l in text.splitlines() if l.startswith(("Samples read", "RMS", "Maximum amp"))]
        if keep(err) != keep(sox_expected):
            raise BenchError("sox stat differs from the original")

    specs = [
        ("ffprobe", "ffprobe of a 10-min MP3, cold", SONG, lambda f: probe + [f], check_probe, "stdout",
         "ffprobe of the URL"),
        ("mpg123", "mpg123 -t (decode all) of a 2-min MP3, cold", CLIP, lambda f: ["mpg123", "-q", "-t", f],
         None, None, "mpg123 -t of the URL"),
        ("mpg123-seek", "mpg123 -t: seek 5 min into a 10-min MP3, decode 2 s, cold", SONG,
         lambda f: ["mpg123", "-q", "-t", "-k", str(SEEK_FRAMES), "-n", "77", f], None, None,
         "mpg123 -t -k of the URL (streams up to the seek point)"),
        ("sox", "sox stat of a 60-s WAV (10 MiB), cold", WAV, lambda f: ["sox", f, "-n", "stat"], check_sox,
         "stderr", "curl | sox stat"),
    ]
    for rid, label, rel, make, check, stream, baseline_label in specs:
        row = Row(f"{rid}-{link}", f"{label} ({link})", "s", "lower", baseline_label, link)
        rows.append(row)

        def baseline(rel=rel, make=make, check=check, stream=stream, rid=rid):
            times = []
            for _ in range(n):
                if rid == "sox":
                    seconds, result = timed(f"curl -sS --fail '{ctx.url(link, rel)}' | sox -t wav - -n stat",
                                            300, shell=True)
                else:
                    seconds, result = timed(make(ctx.url(link, rel)), 300)
                if check:
                    check(getattr(result, stream))
                times.append(seconds)
            return median(times)

        def system(name, rel=rel, make=make, check=check, stream=stream):
            def measure():
                times = []
                for _ in range(n):
                    with mounted(ctx, name, link) as m:
                        seconds, result = timed(make(m.path(rel)), 300)
                        if check:
                            check(getattr(result, stream))
                        times.append(seconds)
                return median(times)
            return measure

        measure_cell(row, "baseline", baseline)
        for name in systems(ctx):
            measure_cell(row, name, system(name))
    return rows


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
        return median([timed(["curl", "-sS", "--fail", "-I"] + urls, 120)[0] for _ in range(n)]) * 1000

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


def row_parallel(ctx, link):
    rels, n = PAR[link], ctx.args.repeats
    total = sum(ctx.size(r) for r in rels)
    row = Row(f"parallel-{link}", f"4 parallel cold readers, 4 × {ctx.size(rels[0]) // MiB} MiB ({link})",
              "MB/s", "higher", "4 parallel curl", link, ("ratio>=", 0.90), "≥ 0.90× 4 curls")

    def together(cmds, timeout=600):
        procs = [subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                  start_new_session=True) for c in cmds]
        start = time.perf_counter()
        try:
            for p in procs:
                left = max(1, timeout - (time.perf_counter() - start))
                p.wait(timeout=left)
        except subprocess.TimeoutExpired:
            raise BenchError(f"4 parallel readers did not finish in {timeout} s")
        finally:
            for p in procs:
                if p.poll() is None:
                    kill_group(p)
        seconds = time.perf_counter() - start
        for p in procs:
            if p.returncode != 0:
                raise BenchError(f"a reader failed: {p.stderr.read().decode(errors='replace')[-200:]}")
        return seconds

    def baseline():
        times = [together([["curl", "-sS", "--fail", "-o", "/dev/null", ctx.url(link, r)] for r in rels])
                 for _ in range(n)]
        return total / median(times) / 1e6

    def system(name):
        def measure():
            times = []
            for _ in range(n):
                with mounted(ctx, name, link) as m:
                    times.append(together([["dd", f"if={m.path(r)}", "of=/dev/null", "bs=1M"] for r in rels]))
                    for r in rels:
                        verify(ctx, m.path(r), r)
            return total / median(times) / 1e6
        return measure

    measure_cell(row, "baseline", baseline)
    for name in systems(ctx):
        measure_cell(row, name, system(name))
    return [row]


def row_prefetch(ctx, link):
    rels = [r for r in ctx.files if r.startswith(("media/", "small/"))]
    total = sum(ctx.size(r) for r in rels)
    n = ctx.args.repeats
    row = Row(f"prefetch-{link}", f"Prefetcher completes a collection, {len(rels)} files, "
              f"{total / MiB:.0f} MiB ({link})", "s", "lower", "curl -Z --parallel-max 3 of every URL", link,
              note="From the return of `rangefs mount --prefetch all` (default --max-downloads 3) until "
                   "`rangefs status --json` (polled every 0.1 s) shows every file complete.")

    def baseline():
        cmd = ["curl", "-sS", "--fail", "-Z", "--parallel-max", "3"]
        for r in rels:
            cmd += ["-o", "/dev/null", ctx.url(link, r)]
        return median([timed(cmd, 600)[0] for _ in range(n)])

    def measure():
        times = []
        for _ in range(n):
            with mounted(ctx, "rangefs", link, prefetch="all", manifest="collection") as m:
                start = time.perf_counter()
                deadline = time.monotonic() + 600
                while True:
                    status = json.loads(run([ctx.rangefs, "status", "--json", str(m.mnt)], 30).stdout)
                    states = [f["state"] for f in status["files"]]
                    if len(states) == len(rels) and all(s == "complete" for s in states):
                        break
                    if any(s == "failed" for s in states):
                        raise BenchError("a file failed: " + str([f.get("failure") for f in status["files"]
                                                                  if f["state"] == "failed"][:1]))
                    if time.monotonic() > deadline:
                        raise BenchError("not complete after 600 s")
                    time.sleep(0.1)
                times.append(time.perf_counter() - start)
                for r in rels:
                    verify(ctx, m.path(r), r)
        return median(times)

    measure_cell(row, "baseline", baseline)
    measure_cell(row, "rangefs", measure)
    na_others(row, "no background completion of a collection")
    return [row]


def play_realtime(path, seconds, original, chunk=16 * 1024, bytes_per_second=STREAM_BYTES_PER_SECOND,
                  warm_up=1.0, slack=60):
    """Reads `path` like an audio player: `chunk` bytes each time the audio clock says the
    previous chunk was played (read i is due i*chunk/bytes_per_second s after the first),
    each checked against `original`. A late read does not move the clock. Returns the
    latencies (s) of the reads due after `warm_up` seconds, and the first read's latency.
    Same rules as Tests/RangeFSIntegrationTests/SupportPlayer.swift (RealTimeReader)."""
    result = {"reads": []}

    def work():
        try:
            fd = os.open(path, os.O_RDONLY)
            try:
                with open(original, "rb") as reference:
                    total = int(seconds * bytes_per_second)
                    offset, index = 0, 0
                    start = time.perf_counter()
                    while offset < total:
                        due = index * chunk / bytes_per_second
                        wait = start + due - time.perf_counter()
                        if wait > 0:
                            time.sleep(wait)
                        began = time.perf_counter()
                        data = os.pread(fd, chunk, offset)
                        result["reads"].append((due, time.perf_counter() - began))
                        reference.seek(offset)
                        if data != reference.read(chunk):
                            result["error"] = f"WRONG BYTES at offset {offset}"
                            return
                        if not data:
                            return
                        offset += len(data)
                        index += 1
            finally:
                os.close(fd)
        except OSError as error:
            result["error"] = str(error)

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(seconds + slack)
    if thread.is_alive():
        raise BenchError(f"real-time read of {path} did not finish within {seconds + slack:.0f} s")
    if "error" in result:
        raise BenchError(result["error"])
    reads = result["reads"]
    judged = [latency for due, latency in reads if due >= warm_up]
    if len(judged) < 10:
        raise BenchError(f"only {len(judged)} reads after the warm-up")
    return judged, reads[0][1]


def rows_streaming(ctx):
    rel, seconds = STREAM, ctx.args.stream_seconds
    size = ctx.size(rel)
    link_text = f"{rate_text(ctx.args.stream_rate)} per connection + {ctx.args.rtt_ms:g} ms RTT"
    what = (f"Real-time playback of a 192 kb/s MP3 ({size / MiB:.0f} MiB, 10 min), {seconds:g} s of audio "
            f"clock, 16 KiB reads, link {link_text}")
    worst_row = Row("stream-worst", f"{what}: worst read after the first second", "ms", "lower",
                    "the same reader on the local file", "stream", ("abs<=", 50), "≤ 50 ms",
                    note="Each system mounts cold; one run per cell. The baseline reads the original file on local disk (page cache "
                         "dropped first when possible).")
    stall_row = Row("stream-stalls", f"{what}: reads over 50 ms after the first second", "reads", "lower",
                    "the same reader on the local file", "stream", ("abs<=", 0), "0")
    rows = [worst_row, stall_row]
    original = str(WWW / rel)

    def record(name, judged, first):
        worst_row.values[name] = max(judged) * 1000
        stall_row.values[name] = float(sum(1 for latency in judged if latency > 0.050))
        log(f"  stream [{name}] worst {worst_row.values[name]:.1f} ms, {stall_row.values[name]:.0f} over 50 ms, "
            f"median {statistics.median(judged) * 1000:.2f} ms, first read {first * 1000:.0f} ms, {len(judged)} judged reads")
        if name != "baseline":
            worst_row.note += f" {name}: first read {first * 1000:.0f} ms, median {statistics.median(judged) * 1000:.2f} ms."

    def fail(name, error):
        for row in rows:
            row.values[name] = f"n/a: {error}"
        log(f"  stream [{name}] n/a: {error}")

    try:
        ctx.drop_caches()
        record("baseline", *play_realtime(original, seconds, original))
    except BenchError as error:
        fail("baseline", error)
    for name in systems(ctx):
        try:
            with mounted(ctx, name, "stream") as m:
                record(name, *play_realtime(m.path(rel), seconds, original))
        except BenchError as error:
            fail(name, error)
    return rows + [row_stream_read_through(ctx, link_text)]


STREAM_READ_THROUGH = 3 * MiB


def row_stream_read_through(ctx, link_text):
    """A cold read of the first 3 MiB of the streaming link's MP3 with dd, against curl of the same
    range: what a reader gets from read-ahead over a link that limits each connection."""
    rel, length = STREAM, STREAM_READ_THROUGH
    with open(WWW / rel, "rb") as f:
        expected = hashlib.sha256(f.read(length)).hexdigest()
    row = Row("stream-read-through", f"Cold read of a file's first {length // MiB} MiB, link {link_text}", "MB/s",
              "higher", "curl of the same range (one connection)", "stream", ("ratio>=", 6.0), "≥ 6× one connection")
    n = ctx.args.repeats

    def baseline():
        seconds, result = timed(["curl", "-sS", "--fail", "-r", f"0-{length - 1}", "-o", "/dev/null",
                                 "-w", "%{size_download}", ctx.url("stream", rel)], 300)
        if int(float(result.stdout.strip() or 0)) != length:
            raise BenchError(f"curl fetched {result.stdout} bytes of the range")
        return length / seconds / 1e6

    def read_through(name):
        times = []
        for _ in range(n):
            with mounted(ctx, name, "stream") as m:
                seconds, result = timed(f"dd if='{m.path(rel)}' bs=1M count={length // MiB} status=none"
                                        " | openssl dgst -sha256 -r", 300, shell=True)
                if result.stdout.split()[0] != expected:
                    raise BenchError("WRONG BYTES in the read-through")
                times.append(seconds)
        return length / median(times) / 1e6

    measure_cell(row, "baseline", baseline)
    for name in systems(ctx):
        measure_cell(row, name, lambda name=name: read_through(name))
    return row


def row_rss_sparse(ctx):
    rel = SPARSE
    row = Row("rss-4g", "Peak RSS reading a 4 GiB file end to end (sparse on the server)", "MiB", "lower",
              "target", "plain", ("abs<=", 64), "≤ 64 MiB",
              note="VmHWM of the mount process after `dd bs=1M | openssl dgst -sha256` of the whole file.")
    row.values["baseline"] = 64.0
    speeds = {}
    for name in systems(ctx):
        def measure(name=name):
            with mounted(ctx, name, "plain") as m:
                if not m.pid:
                    raise BenchError("mount process not found")
                seconds, result = timed(f"dd if='{m.path(rel)}' bs=1M status=none | openssl dgst -sha256 -r",
                                        900, shell=True)
                if result.stdout.split()[0] != ctx.files[rel]["sha256"]:
                    raise BenchError("WRONG BYTES in the 4 GiB file")
                speeds[name] = ctx.size(rel) / seconds / 1e6
                return vm_hwm_mib(m.pid)
        measure_cell(row, name, measure)
    row.note += " Read speed (with hashing): " + ", ".join(f"{k} {v:.0f} MB/s" for k, v in speeds.items()) + "."
    return [row]


def rows_many(ctx):
    mount_row = Row("many-mount", "100,000-entry manifest: mount time", "s", "lower", "target", "plain",
                    ("abs<=", 2.0), "≤ 2 s",
                    note="RangeFS: `rangefs mount` of the manifest until mounted; rclone and "
                         "httpdirfs mount the same tree from nginx's autoindex listings.")
    ls_row = Row("many-ls", f"100,000 entries: ls (names) of its largest directory ({MANY_FLAT:,} files)", "ms",
                 "lower", "ls of the local directory", "plain")
    lsl_row = Row("many-lsl", "100,000 entries: ls -l of a 100-file directory, cold", "ms", "lower",
                  "curl -I of the 100 URLs (one process)", "plain")
    rss_row = Row("many-rss", "100,000 entries: peak RSS after those listings", "MiB", "lower", "target",
                  "plain", ("abs<=", 64), "≤ 64 MiB")
    rows = [mount_row, ls_row, lsl_row, rss_row]
    mount_row.values["baseline"] = 2.0
    rss_row.values["baseline"] = 64.0
    flat = "many/flat"
    measure_cell(ls_row, "baseline", lambda: median(
        [timed(["ls", "-1", "--color=never", str(WWW / flat)], 60)[0] for _ in range(3)]) * 1000)
    urls = [ctx.url("plain", f"many/d000/f{j:03d}.bin") for j in range(MANY_PER_DIR)]
    measure_cell(lsl_row, "baseline", lambda: median(
        [timed(["curl", "-sS", "--fail", "-I"] + urls, 120)[0] for _ in range(3)]) * 1000)
    for name in systems(ctx):
        try:
            with mounted(ctx, name, "plain", manifest="many") as m:
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
            for row in rows:
                row.values.setdefault(name, f"n/a: {error}")
            log(f"  many [{name}] n/a: {error}")
    return rows


# ----------------------------------------------------------------------------- mirrors

class MirrorServer:
    """One mirror: its own nginx on its own port, so that it can be stopped alone (a mirror that
    goes away mid-read) and its access log counts what it served."""

    def __init__(self, ctx, index, root):
        self.ctx, self.index, self.port = ctx, index, MIRROR_PORTS[index]
        self.dir = ctx.work / "mirrors" / f"m{index + 1}"
        self.log = self.dir / "access.log"
        self.proc = None
        (self.dir / "tmp").mkdir(parents=True, exist_ok=True)
        user = "user root;" if os.getuid() == 0 else ""
        (self.dir / "nginx.conf").write_text(f"""daemon off;
worker_processes 1;
{user}
pid {self.dir}/nginx.pid;
error_log {self.dir}/error.log;
events {{ worker_connections 1024; }}
http {{
    default_type application/octet-stream;
    sendfile on;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    log_format bench '$request_method\\t$uri\\t$status\\t$body_bytes_sent\\t$http_range';
    client_body_temp_path {self.dir}/tmp/body;
    proxy_temp_path {self.dir}/tmp/proxy;
    fastcgi_temp_path {self.dir}/tmp/fastcgi;
    uwsgi_temp_path {self.dir}/tmp/uwsgi;
    scgi_temp_path {self.dir}/tmp/scgi;
    server {{
        listen 127.0.0.1:{self.port};
        root {root};
        limit_rate {ctx.args.mirror_rate};
        access_log {self.log} bench;
    }}
}}
""")

    @property
    def name(self):
        return f"mirror {self.index + 1}"

    def url(self, rel):
        return f"http://127.0.0.1:{self.port}/{rel}"

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def start(self):
        if port_open(self.port):
            raise BenchError(f"something already listens on 127.0.0.1:{self.port}")
        self.proc = subprocess.Popen(["/usr/sbin/nginx", "-c", str(self.dir / "nginx.conf"), "-p", str(self.dir) + "/",
                                      "-e", str(self.dir / "error.log")], start_new_session=True,
                                     stdin=subprocess.DEVNULL)
        self.ctx.servers.append(self.proc)
        write_server_pids(self.ctx)
        wait_port(self.port, self.proc, f"nginx of {self.name}")

    def stop(self):
        """SIGTERM is nginx's fast shutdown: open connections are closed at once, new ones refused."""
        if self.running():
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self.proc in self.ctx.servers:
            self.ctx.servers.remove(self.proc)
            write_server_pids(self.ctx)

    def established(self):
        """Client connections this mirror holds now (server side of /proc/net/tcp, ESTABLISHED)."""
        port = f":{self.port:04X}"
        with open("/proc/net/tcp") as f:
            return sum(1 for line in f.readlines()[1:]
                       if line.split()[1].endswith(port) and line.split()[3] == "01")


def write_server_pids(ctx):
    """run.sh stops what this file lists if bench.py itself is killed."""
    (ctx.work / "servers.pid").write_text("".join(f"{p.pid}\n" for p in ctx.servers))


def ensure_mirror_file():
    """The mirrors' 256 MiB file, generated the first time it is missing (outside DATA_VERSION);
    returns its sha256."""
    path, digest = MIRROR_ROOT / MIRROR_FILE, MIRROR_ROOT / (MIRROR_FILE + ".sha256")
    if not (path.exists() and digest.exists() and path.stat().st_size == MIRROR_SIZE):
        log(f"generating {path.relative_to(ROOT)} (once)")
        MIRROR_ROOT.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as f:
            for _ in range(MIRROR_SIZE // (4 * MiB)):
                f.write(os.urandom(4 * MiB))
        os.chmod(path, 0o644)
        os.chmod(MIRROR_ROOT, 0o755)
        digest.write_text(sha256_file(path) + "\n")
    return digest.read_text().split()[0]


def write_metalink(path, mirrors, rel, sha256):
    """A Metalink 4 document naming the file once with every mirror's URL, its size, its sha-256
    and the sha-256 of each MIRROR_PIECE-byte piece."""
    pieces = []
    with open(MIRROR_ROOT / rel, "rb") as f:
        while chunk := f.read(MIRROR_PIECE):
            pieces.append(hashlib.sha256(chunk).hexdigest())
    urls = "".join(f'    <url priority="{m.index + 1}">{m.url(rel)}</url>\n' for m in mirrors)
    hashes = "".join(f"      <hash>{h}</hash>\n" for h in pieces)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"""<?xml version="1.0" encoding="UTF-8"?>
<metalink xmlns="urn:ietf:params:xml:ns:metalink">
  <file name="{rel}">
    <size>{MIRROR_SIZE}</size>
    <hash type="sha-256">{sha256}</hash>
    <pieces length="{MIRROR_PIECE}" type="sha-256">
{hashes}    </pieces>
{urls}  </file>
</metalink>
""")


def dd_progress(proc):
    """Bytes dd has read: the offset of its input, which dd opens as its standard input."""
    with open(f"/proc/{proc.pid}/fdinfo/0") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("pos:"))


def run_stopping_a_mirror(cmd, progress, mirrors, timeout):
    """Runs cmd; once progress(proc) reaches half the file, stops the mirror holding the most
    connections at that moment (mirror 2 on a tie). Returns (seconds, result, stopped mirror)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    stopped = None
    try:
        while proc.poll() is None:
            if time.perf_counter() - start > timeout:
                raise BenchError(f"timed out after {timeout:g} s: {short(cmd)}")
            if stopped is None:
                try:
                    done = progress(proc)
                except (OSError, StopIteration):
                    done = 0
                if done >= MIRROR_SIZE // 2:
                    stopped = max(mirrors, key=lambda m: (m.established(), m.index == 1))
                    log(f"    {done // MiB} MiB read: stopping {stopped.name} "
                        f"({', '.join(f'{m.name}: {m.established()}' for m in mirrors)} connections)")
                    stopped.stop()
            time.sleep(0.01)
        seconds = time.perf_counter() - start
        out, err = proc.communicate(timeout=30)
    except BaseException:
        kill_group(proc)
        raise
    if proc.returncode != 0:
        raise BenchError(f"{short(cmd)} exited {proc.returncode}: {err.decode(errors='replace').strip()[-300:]}")
    if stopped is None:
        raise BenchError(f"{short(cmd)} ended before half the file was read: no mirror was stopped")
    return seconds, subprocess.CompletedProcess(cmd, 0, out.decode(errors="replace"), err.decode(errors="replace")), stopped


def dd_bytes(result):
    match = re.search(r"^(\d+) bytes", result.stderr, re.M)
    return int(match.group(1)) if match else -1


def rows_mirrors(ctx):
    """One file on three mirrors, each nginx limited per connection: RangeFS mounting a Metalink
    that names all three, against curl of one mirror and aria2c over the three; then the same
    with the busiest mirror stopped half way through the read."""
    n = ctx.args.repeats
    rate = ctx.args.mirror_rate
    sha256 = ensure_mirror_file()
    rel = MIRROR_FILE
    ctx.files[rel] = {"size": MIRROR_SIZE, "sha256": sha256}
    mirrors = [MirrorServer(ctx, i, MIRROR_ROOT) for i in range(len(MIRROR_PORTS))]
    for m in mirrors:
        ctx.logs[f"mirror{m.index + 1}"] = m.log
    metalink = ctx.work / "manifests" / "mirrors.meta4"
    write_metalink(metalink, mirrors, rel, sha256)
    mib = MIRROR_SIZE // MiB
    read = Row("mirrors-read", f"3 mirrors ({rate}/connection each): cold sequential read, {mib} MiB", "MB/s",
               "higher", "curl of one mirror")
    failover = Row("mirrors-failover", "the same, the busiest mirror stopped half way through", "MB/s", "higher",
                   "curl of one mirror (no failure)")
    rows = [read, failover]
    if ctx.others:
        for row in rows:
            na_others(row, "one URL per file: a Metalink's mirrors cannot be mounted")
    counts = {row.rid: [] for row in rows}      # per repeat: (who, [(requests, MiB sent) per mirror])
    speeds = {row.rid: {} for row in rows}      # who -> MB/s of each repeat (text), or why it failed
    stopped_names = []

    def marks():
        return [LogMark(ctx, f"mirror{m.index + 1}") for m in mirrors]

    def served(before):
        return [(mark.requests(), mark.bytes_sent(rel) / MiB) for mark in before]

    def restart_stopped():
        for m in mirrors:
            if not m.running():
                m.start()

    def curl_mirror():
        times = []
        for _ in range(n):
            seconds, result = timed(["curl", "-sS", "--fail", "-o", "/dev/null", "-w", "%{size_download}",
                                     mirrors[0].url(rel)], 600)
            if int(float(result.stdout.strip() or 0)) != MIRROR_SIZE:
                raise BenchError(f"curl fetched {result.stdout} bytes of {rel}")
            times.append(seconds)
        out = run(f"curl -sS --fail '{mirrors[0].url(rel)}' | openssl dgst -sha256 -r", 600, shell=True).stdout
        if out.split()[0] != sha256:
            raise BenchError(f"curl of {rel} returned wrong bytes")
        return MIRROR_SIZE / median(times) / 1e6

    def repeated(row, who, once):
        """Runs once() n times, each returning seconds; MB/s of each repeat, or why it failed,
        and what each mirror served go in the row's note."""
        def measure():
            times = []
            for _ in range(n):
                before = marks()
                try:
                    times.append(once())
                    speeds[row.rid].setdefault(who, []).append(f"{MIRROR_SIZE / times[-1] / 1e6:.1f}")
                except BenchError as error:
                    speeds[row.rid].setdefault(who, []).append(f"failed ({error})")
                    raise
                finally:
                    restart_stopped()
                    counts[row.rid].append((who, served(before)))
            return MIRROR_SIZE / median(times) / 1e6
        return measure

    def timed_read(cmd, who, progress, stop_half_way):
        if not stop_half_way:
            return timed(cmd, MIRROR_READ_TIMEOUT)
        seconds, result, stopped = run_stopping_a_mirror(cmd, progress, mirrors, MIRROR_READ_TIMEOUT)
        stopped_names.append(f"{who}: {stopped.name}")
        return seconds, result

    def rangefs(stop_half_way):
        def once():
            with mounted(ctx, "rangefs", "plain", source=metalink) as m:
                cmd = ["dd", f"if={m.path(rel)}", "of=/dev/null", "bs=1M"]
                seconds, result = timed_read(cmd, "RangeFS", dd_progress, stop_half_way)
                if dd_bytes(result) != MIRROR_SIZE:
                    raise BenchError(f"read {dd_bytes(result)} bytes of {rel}, expected {MIRROR_SIZE}")
                verify(ctx, m.path(rel), rel)
                return seconds
        return once

    def aria2c(stop_half_way):
        def once():
            if not shutil.which("aria2c"):
                raise BenchError("aria2c is not installed")
            # tmpfs where there is one: the disk must not be what is measured.
            out_dir = Path(tempfile.mkdtemp(prefix="rangefs-bench-aria2-",
                                            dir="/dev/shm" if os.path.isdir("/dev/shm") else ctx.work))
            target = out_dir / "out.bin"
            try:
                cmd = ["aria2c", "-x3", "-s3", "--dir", str(out_dir), "--out", target.name,
                       "--file-allocation=none", "--allow-overwrite=true", "--auto-file-renaming=false",
                       "--console-log-level=warn", "--summary-interval=0", "--download-result=hide"]
                cmd += [m.url(rel) for m in mirrors]
                written = lambda proc: target.stat().st_blocks * 512
                seconds, _ = timed_read(cmd, "aria2c", written, stop_half_way)
                if target.stat().st_size != MIRROR_SIZE or sha256_file(target) != sha256:
                    raise BenchError("WRONG BYTES: aria2c's file differs from the original")
                return seconds
            finally:
                shutil.rmtree(out_dir, ignore_errors=True)
        return once

    try:
        for m in mirrors:
            m.start()
        log(f"mirrors: nginx on 127.0.0.1:{', '.join(str(p) for p in MIRROR_PORTS)} (limit_rate {rate} each)")
        measure_cell(read, "baseline", curl_mirror)
        failover.values["baseline"] = read.values["baseline"]
        measure_cell(read, "rangefs", repeated(read, "RangeFS", rangefs(False)))
        measure_cell(failover, "rangefs", repeated(failover, "RangeFS", rangefs(True)))
        if ctx.others:
            measure_cell(read, "aria2c", repeated(read, "aria2c", aria2c(False)))
            measure_cell(failover, "aria2c", repeated(failover, "aria2c", aria2c(True)))
    finally:
        for m in mirrors:
            m.stop()
    for row in rows:
        repeats = [f"{who} {', '.join(values)}" for who, values in speeds[row.rid].items()]
        lines = [f"{who} {', '.join(f'{m.name} {r} requests/{b:.0f} MiB' for m, (r, b) in zip(mirrors, per))}"
                 for who, per in counts[row.rid]]
        row.note = ("MB/s of each repeat: " + "; ".join(repeats) + ". Served per repeat (nginx access logs): "
                    + "; ".join(lines) + ".")
    if stopped_names:
        failover.note += " Stopped: " + "; ".join(stopped_names) + "."
    for row in rows:
        log(f"  {row.rid}: {row.note}")
    return rows


def rows_web(ctx, link):
    """A web directory mounted by its URL, as each tool mounts nginx's autoindex listings."""
    n = ctx.args.repeats
    wide, tree = "web/wide", "web/tree"
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
    page = [ctx.url(link, wide + "/")]
    pages = [ctx.url(link, tree + "/")] + [ctx.url(link, f"{tree}/d{d:02d}/") for d in range(WEB_DIRS)]
    measure_cell(cold, "baseline", lambda: median([timed(["curl", "-sS", "--fail", "-o", "/dev/null"] + page, 60)[0]
                                                   for _ in range(n)]) * 1000)
    again.values["baseline"] = cold.values["baseline"]
    measure_cell(walk, "baseline", lambda: median([timed(["curl", "-sS", "--fail"] + sum((["-o", "/dev/null", u] for u in pages), []), 300)[0]
                                                   for _ in range(n)]))
    sent.values["baseline"] = float(len(pages))

    def ls_wide(m):
        seconds, result = timed(["ls", "-la", m.path(wide)], 600)
        files = [l for l in result.stdout.splitlines() if l.startswith("-")]
        if len(files) != WEB_WIDE:
            raise BenchError(f"ls -la listed {len(files)} files, expected {WEB_WIDE}")
        return seconds

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
            cold.values[name], again.values[name] = median(t_cold) * 1000, median(t_again) * 1000
            walk.values[name], sent.values[name] = median(t_walk), float(median(requests))
            log(f"  web [{name}] ls {cold.values[name]:.0f} ms, again {again.values[name]:.0f} ms, "
                f"find {walk.values[name]:.2f} s with {sent.values[name]:.0f} requests")
        except BenchError as error:
            for row in rows:
                row.values.setdefault(name, f"n/a: {error}")
            log(f"  web [{name}] n/a: {error}")
    return rows


# ----------------------------------------------------------------------------- music library

def library_files():
    """The library's MP3s, by their paths under library/, in the order a scan takes them."""
    root = WWW / LIBRARY
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.mp3"))


def scan_library(root, command, normalize, timeout=LIBRARY_SCAN_TIMEOUT):
    """A media server's first scan of `root`: find every MP3, then one process per file, one file
    at a time. Returns the seconds from the start of find to the end of the last process, and
    each file's output (`normalize(stdout, path)`) by its path under `root`."""
    deadline = time.monotonic() + timeout
    start = time.perf_counter()
    found = run(["find", str(root), "-type", "f", "-name", "*.mp3"], timeout).stdout.splitlines()
    outputs = {}
    for path in sorted(found):
        left = deadline - time.monotonic()
        if left <= 0:
            raise BenchError(f"the scan did not finish in {timeout} s ({len(outputs)} of {len(found)} files)")
        outputs[os.path.relpath(path, root)] = normalize(run(command(path), min(left, 120)).stdout, path)
    return time.perf_counter() - start, outputs


def mutagen_output(out, path):
    """mutagen-inspect's report without its first line, which names the file's path."""
    lines = out.splitlines()
    if not lines or not lines[0].startswith("-- "):
        raise BenchError(f"mutagen-inspect printed no report for {path}")
    return "\n".join(lines[1:])


def ffprobe_output(out, path):
    """ffprobe's JSON without the file name."""
    try:
        report = json.loads(out)
        report["format"].pop("filename")
    except (ValueError, KeyError, TypeError):
        raise BenchError(f"ffprobe printed no report for {path}")
    return json.dumps(report, sort_keys=True)


def library_names(rel):
    """Title, artist and album that ensure_library gave the file at `rel` (its path tells)."""
    artist, album, name = rel.split("/")
    return name[3:-len(".mp3")], artist, album


def check_mutagen(outputs):
    """Every file's tags as written, its cover, and the ID3v1 tag's year where the file ends in one."""
    for rel, out in outputs.items():
        title, artist, album = library_names(rel)
        lines = out.splitlines()
        track = int(rel.split("/")[2][:2])
        want = [f"TIT2={title}", f"TPE1={artist}", f"TALB={album}", f"TRCK={track}/{LIBRARY_TRACKS}"]
        missing = [w for w in want if w not in lines]
        if not any(l.startswith("APIC=cover front, Album cover (image/jpeg") for l in lines):
            missing.append("the cover")
        with open(WWW / LIBRARY / rel, "rb") as f:
            f.seek(-128, os.SEEK_END)
            if f.read(3) == b"TAG" and not any(l.startswith("TDRC=") for l in lines):
                missing.append("the ID3v1 tag's year")
        if missing:
            raise BenchError(f"mutagen-inspect of the local {rel} lacks {', '.join(missing)}")


def check_ffprobe(outputs):
    """Every file's title and artist, an MP3 audio stream and the cover as an attached picture."""
    for rel, out in outputs.items():
        title, artist, _ = library_names(rel)
        report = json.loads(out)
        tags = report["format"].get("tags", {})
        streams = report.get("streams", [])
        if (tags.get("title"), tags.get("artist")) != (title, artist) or [s.get("codec_name") for s in streams] != \
                ["mp3", "mjpeg"] or streams[1].get("disposition", {}).get("attached_pic") != 1:
            raise BenchError(f"ffprobe of the local {rel} lacks its tags, its audio or its cover")


def rows_library(ctx, link):
    """A first scan of a freshly mounted music library, as a media server or a tagger makes one
    (Jellyfin, Navidrome, beets open every file once): a tag reader (mutagen, the library beets and
    Picard read tags with) and ffprobe, one process per file, one file at a time. The baseline is
    the same scan of the local files. With --prefetch all RangeFS fetches the heads and tails of
    every file, then whole files, in the background while the scan runs."""
    n = ctx.args.repeats
    files = library_files()
    size = sum((WWW / LIBRARY / rel).stat().st_size for rel in files)
    directory = LIBRARY + "/"
    # What each reads of this library (strace of the local scans).
    scans = [
        ("tags", "mutagen-inspect", "mutagen-inspect", lambda f: ["mutagen-inspect", f], mutagen_output,
         check_mutagen, "mutagen-inspect reads about 70 KiB at the head of each file (the ID3v2 tag with its "
                        "cover, the first frame) and its last 160 bytes (ID3v1, APEv2): 6.6 MiB in all."),
        ("ffprobe", "ffprobe -show_format -show_streams", "ffprobe",
         lambda f: ["ffprobe", "-v", "error", "-show_format", "-show_streams", "-of", "json", f], ffprobe_output,
         check_ffprobe, "ffprobe reads the first 96 or 128 KiB of each file, nothing at its end: 10.3 MiB in all."),
    ]
    rows = []
    for rid, label, tool, command, normalize, check, reads in scans:
        what = f"First scan of a {len(files)}-MP3 library ({size / MiB:.0f} MiB): {label} per file ({link})"
        main = Row(f"library-{rid}-{link}", what, "s", "lower", "the same scan of the local files", link,
                   note=f"The web directory {directory} mounted by its URL (nginx's autoindex), cold: a fresh mount, "
                        "an empty cache, the page cache dropped; find, then one process per file, one at a time "
                        "(mount time not counted); the baseline scans the local files, the page cache dropped. "
                        "Each output is compared with the local scan's, which is checked against the tags written. "
                        f"rclone and httpdirfs one run each. {reads} Fetched: the bytes "
                        f"nginx sent under /{directory} and its requests, from the mount until the unmount right "
                        "after the scan (RangeFS: median of the repeats).")
        rows.append(main)
        expected = {}

        def baseline(tool=tool, command=command, normalize=normalize, check=check, expected=expected):
            if not shutil.which(tool):
                raise BenchError(f"{tool} is not installed (bench/run.sh installs it)")
            times = []
            for _ in range(n):
                ctx.drop_caches()
                seconds, outputs = scan_library(WWW / LIBRARY, command, normalize)
                if sorted(outputs) != files:
                    raise BenchError(f"the local scan found {len(outputs)} files, expected {len(files)}")
                check(outputs)
                expected.update(outputs)
                times.append(seconds)
            return median(times)

        def system(row, name, tool=tool, command=command, normalize=normalize, expected=expected):
            def measure():
                if not expected:
                    raise BenchError("no local scan to compare with")
                rangefs = name == "rangefs"
                times, sent, requests = [], [], []
                for _ in range(n if rangefs else 1):
                    ctx.drop_caches()
                    LogMark.settle(ctx, link)     # the last run's dropped requests, logged late, are not ours
                    mark = LogMark(ctx, link)
                    with mounted(ctx, name, link, listing=True, directory=directory) as m:
                        seconds, outputs = scan_library(m.mnt, command, normalize,
                                                        LIBRARY_SCAN_TIMEOUT if rangefs else LIBRARY_OTHERS_TIMEOUT)
                    # Unmounted right after the scan: the background transfers stop there.
                    fetched, count = mark.traffic(ctx, link, directory)
                    if sorted(outputs) != files:
                        raise BenchError(f"the scan found {len(outputs)} files, expected {len(files)}")
                    wrong = [rel for rel in files if outputs[rel] != expected[rel]]
                    if wrong:
                        raise BenchError(f"{tool} read {len(wrong)} files differently than the local ones, "
                                         f"first {wrong[0]}")
                    times.append(seconds)
                    sent.append(fetched)
                    requests.append(count)
                text = f"{median(sent) / MiB:.1f} MiB in {median(requests):.0f} requests"
                row.note += f" {name} fetched {text}" + ("." if rangefs else f" ({times[0]:.1f} s, one run).")
                log(f"  {row.rid} [{name}] fetched {text}")
                return median(times)
            return measure

        measure_cell(main, "baseline", baseline)
        for name in systems(ctx):
            measure_cell(main, name, system(main, name))
    return rows


# ----------------------------------------------------------------------------- S3 bucket

def s3_python(ctx):
    """A python3 that has boto3 and moto (bench.py itself runs on Debian's python3, which may
    not): --s3-python, else the first python3 on PATH, else this one."""
    candidates = [ctx.args.s3_python, shutil.which("python3"), sys.executable]
    for python in [c for c in candidates if c]:
        try:
            if run([python, "-c", "import boto3, moto.server"], 60, check=False).returncode == 0:
                return python
        except (BenchError, OSError):
            continue
    raise BenchError("no python3 with boto3 and moto (pip install 'moto[server]' boto3)")


def ensure_bucket_object():
    """The bucket's 256 MiB object, generated the first time it is missing; returns its sha256."""
    path, digest = DATA / "bucket" / "big256.bin", DATA / "bucket" / "big256.sha256"
    if not (path.exists() and digest.exists() and path.stat().st_size == BUCKET_BIG_SIZE):
        log(f"generating {path.relative_to(ROOT)} (once)")
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as f:
            for _ in range(BUCKET_BIG_SIZE // (4 * MiB)):
                f.write(os.urandom(4 * MiB))
        digest.write_text(sha256_file(path) + "\n")
    return path, digest.read_text().strip()


def s3_client(ctx, *args, timeout=600):
    """Runs bench/s3_client.py with the bucket's python; returns its JSON answer."""
    bucket = ctx.bucket
    result = run([bucket["python"], str(BENCH / "s3_client.py"), *args, "--endpoint", bucket["endpoint"],
                  "--bucket", BUCKET], timeout)
    return json.loads(result.stdout)


def start_bucket(ctx):
    """Starts moto's S3 server on 127.0.0.1:S3_PORT (stopped on exit with the other servers)
    and puts the bench bucket: web/wide's 1,000 files under wide/ and the 256 MiB object, all
    public-read. Once per run; the set-up time is logged, in no row."""
    if ctx.bucket:
        return
    python = s3_python(ctx)
    if port_open(S3_PORT):
        raise BenchError(f"something already listens on 127.0.0.1:{S3_PORT}")
    big, sha256 = ensure_bucket_object()
    moto_log = ctx.work / "moto.log"
    with open(moto_log, "wb") as out:
        # moto_server's own module, run by the python that has it (the moto_server script
        # may not be on PATH).
        moto = subprocess.Popen([python, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(S3_PORT)],
                                start_new_session=True, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT)
    ctx.servers.append(moto)
    write_server_pids(ctx)
    wait_port(S3_PORT, moto, "moto_server", timeout=60)
    ctx.bucket = {"python": python, "endpoint": f"http://127.0.0.1:{S3_PORT}", "sha256": sha256,
                  "log": moto_log}
    wide = WWW / "web" / "wide"
    answer = s3_client(ctx, "setup", "--wide-dir", str(wide), "--wide-prefix", BUCKET_WIDE + "/",
                       "--big", str(big), "--big-key", BUCKET_BIG)
    if answer["wide"] != WEB_WIDE:
        raise BenchError(f"put {answer['wide']} objects under {BUCKET_WIDE}/, expected {WEB_WIDE}")
    log(f"moto on 127.0.0.1:{S3_PORT}: bucket {BUCKET} with {answer['wide']} objects under {BUCKET_WIDE}/ and "
        f"{BUCKET_BIG} (ETag {answer['big_etag']}) put in {answer['seconds']:.1f} s")


def bucket_mount_command(ctx, system, mnt, cache, prefetch):
    """How each system mounts the bench bucket, unsigned (its objects are public-read):
    the command and its environment (None: this process's)."""
    if not ctx.bucket:
        raise BenchError("the bucket is not set up")
    endpoint = ctx.bucket["endpoint"]
    if system == "rangefs":
        return [ctx.rangefs, "mount", f"s3://{BUCKET}/", str(mnt), "--endpoint", endpoint, "--path-style",
                "--no-sign-request", "--cache-dir", str(cache), "--prefetch", prefetch], None
    if system == "rclone":
        # rclone's AWS SDK refuses AWS_CA_BUNDLE with rclone's own HTTP transport ("unable to
        # load custom CA bundle"); the endpoint is plain http, so it is left out.
        env = {k: v for k, v in os.environ.items() if k != "AWS_CA_BUNDLE"}
        return ["rclone", "mount", f":s3:{BUCKET}", str(mnt), "--s3-provider", "Other",
                "--s3-endpoint", endpoint, "--s3-force-path-style", "--s3-env-auth=false",
                "--s3-access-key-id=", "--s3-secret-access-key=",
                "--config", str(ctx.work / "rclone.conf"), "--read-only",
                "--vfs-cache-mode", "full", "--cache-dir", str(cache),
                "--daemon", "--log-file", str(cache / "rclone.log"), "--log-level", "NOTICE"], env
    raise BenchError(f"{system} cannot mount an S3 bucket")


class MotoMark:
    """Requests moto's server logged after this mark (Werkzeug logs one line per request),
    by kind: LIST for a GET of the bucket itself (ListObjects, V1 as rclone asks or V2),
    else the method."""

    def __init__(self, ctx):
        self.path = ctx.bucket["log"]
        self.offset = self.path.stat().st_size

    def requests(self):
        """How many requests of each kind, e.g. {"LIST": 2, "HEAD": 1000}."""
        time.sleep(0.2)   # the log line is written as the request ends
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            text = f.read().decode(errors="replace")
        counts = {}
        for method, target in re.findall(r'"([A-Z]+) (\S+) HTTP/', text):
            kind = "LIST" if method == "GET" and target.split("?")[0].rstrip("/") == "/" + BUCKET else method
            counts[kind] = counts.get(kind, 0) + 1
        return counts


def request_text(counts):
    """{"LIST": 2, "HEAD": 1000} -> "1,002 requests (1,000 HEAD, 2 LIST)"."""
    parts = ", ".join(f"{n:,} {method}" for method, n in sorted(counts.items()))
    return f"{sum(counts.values()):,} requests" + (f" ({parts})" if parts else "")


def rows_bucket(ctx):
    """An S3 bucket on moto's server, mounted by its s3:// URL (RangeFS) or rclone's S3 backend,
    against boto3 and the AWS CLI on the same server in the same run."""
    n, size = ctx.args.repeats, BUCKET_BIG_SIZE
    ls_row = Row("bucket-ls", f"S3 bucket: mount, then ls -la of a {WEB_WIDE:,}-object prefix", "ms", "lower",
                 "boto3: one ListObjectsV2 of that prefix", "bucket",
                 note="moto's S3 server on loopback (a Python server that closes every connection). From the "
                      "start of the mount command to the end of ls -la, cache empty; every "
                      "client unsigned (the objects are public-read). The baseline times the call alone, "
                      "its client made before.")
    again = Row("bucket-ls-again", "S3 bucket: the same after a remount on the same cache", "ms", "lower",
                "boto3: one ListObjectsV2 of that prefix", "bucket")
    aws = shutil.which("aws")
    read = Row("bucket-read", f"S3 bucket: cold sequential read of a {size // MiB} MiB object", "MB/s", "higher",
               "aws s3 cp to tmpfs" if aws else "boto3 download_file to tmpfs", "bucket",
               note="Fresh mount and empty cache per repeat (mount time not counted), dd bs=1M to /dev/null, "
                    "then the object's sha256 read through the same mount. The multipart object was put with "
                    "boto3's upload_file (ETag of 32 parts).")
    rows = [ls_row, again, read]
    try:
        start_bucket(ctx)
    except BenchError as error:
        for row in rows:
            for key in ("baseline",) + SYSTEMS:
                row.values[key] = f"n/a: {error}"
        log(f"  bucket n/a: {error}")
        return rows
    endpoint = ctx.bucket["endpoint"]
    expected = {p.name: p.stat().st_size for p in (WWW / "web" / "wide").iterdir()}

    def baseline_ls():
        seconds = s3_client(ctx, "list", "--prefix", BUCKET_WIDE + "/", "--expect", str(WEB_WIDE),
                            "--repeats", str(n))["seconds"]
        log(f"  bucket-ls [baseline] repeats: {', '.join(f'{s * 1000:.0f}' for s in seconds)} ms")
        return median(seconds) * 1000

    measure_cell(ls_row, "baseline", baseline_ls)
    again.values["baseline"] = ls_row.values["baseline"]
    if aws:
        def aws_ls():
            times = []
            for _ in range(n):
                seconds, result = timed([aws, "s3", "ls", f"s3://{BUCKET}/{BUCKET_WIDE}/", "--endpoint-url", endpoint,
                                         "--no-sign-request"], 120)
                if len(result.stdout.splitlines()) != WEB_WIDE:
                    raise BenchError(f"aws s3 ls listed {len(result.stdout.splitlines())} objects")
                times.append(seconds)
            return median(times) * 1000
        try:
            ls_row.note += f" `aws s3 ls` of the prefix, a process with its start-up: {aws_ls():.0f} ms."
        except BenchError as error:
            ls_row.note += f" `aws s3 ls`: n/a ({error})."

    def ls_wide(m):
        seconds, result = timed(["ls", "-la", m.path(BUCKET_WIDE)], 600)
        listed = {l.split()[-1]: int(l.split()[4]) for l in result.stdout.splitlines() if l.startswith("-")}
        if listed != expected:
            raise BenchError(f"ls -la showed {len(listed)} files, expected {len(expected)}"
                             + (" (names or sizes differ)" if len(listed) == len(expected) else ""))
        return seconds

    for name in systems(ctx):
        if name == "httpdirfs":
            for row in rows:
                row.values[name] = "n/a: httpdirfs mounts HTTP directory listings, not S3 buckets"
            continue
        try:
            t_cold, t_again, sent, sent_again = [], [], [], []
            for _ in range(n):
                cache = ctx.new_dir("cache", f"{name}-bucket")
                mark = MotoMark(ctx)
                with mounted(ctx, name, "bucket", cache=cache, keep_cache=True) as m:
                    t_cold.append(m.mount_seconds + ls_wide(m))
                    sent.append(mark.requests())
                mark = MotoMark(ctx)
                with mounted(ctx, name, "bucket", cache=cache) as m:
                    t_again.append(m.mount_seconds + ls_wide(m))
                    sent_again.append(mark.requests())
            ls_row.values[name], again.values[name] = median(t_cold) * 1000, median(t_again) * 1000
            ls_row.note += f" {name}: {request_text(sent[-1])} to the server for mount and ls (last repeat)."
            again.note += f" {name}: {request_text(sent_again[-1])} (last repeat)."
            log(f"  bucket-ls [{name}] repeats: {', '.join(f'{t * 1000:.0f}' for t in t_cold)} ms, requests {sent}; "
                f"again: {', '.join(f'{t * 1000:.0f}' for t in t_again)} ms, requests {sent_again}")
        except BenchError as error:
            for row in (ls_row, again):
                row.values.setdefault(name, f"n/a: {error}")
            log(f"  bucket-ls [{name}] n/a: {error}")

    scratch = Path("/dev/shm") if os.path.isdir("/dev/shm") else ctx.work
    target = scratch / f"rangefs-bench-{os.getpid()}.bin"

    def check_copy():
        try:
            if not target.exists():
                raise BenchError(f"no copy of {BUCKET_BIG} was written")
            if target.stat().st_size != size or sha256_file(target) != ctx.bucket["sha256"]:
                raise BenchError(f"WRONG BYTES: the copy of {BUCKET_BIG} differs from the original")
        finally:
            target.unlink(missing_ok=True)

    def aws_cp():
        times = []
        try:
            for _ in range(n):
                seconds, _ = timed([aws, "s3", "cp", f"s3://{BUCKET}/{BUCKET_BIG}", str(target), "--endpoint-url",
                                    endpoint, "--no-sign-request", "--only-show-errors"], 600)
                check_copy()
                times.append(seconds)
        finally:
            target.unlink(missing_ok=True)
        log(f"  bucket-read [aws s3 cp] repeats: {', '.join(f'{size / t / 1e6:.0f}' for t in times)} MB/s")
        return size / median(times) / 1e6

    def boto3_download():
        try:
            seconds = s3_client(ctx, "download", "--key", BUCKET_BIG, "--out", str(target),
                                "--repeats", str(n))["seconds"]
            check_copy()
        finally:
            target.unlink(missing_ok=True)
        log(f"  bucket-read [boto3 download_file] repeats: {', '.join(f'{size / t / 1e6:.0f}' for t in seconds)} MB/s")
        return size / median(seconds) / 1e6

    def curl_whole():
        """One GET of the whole object: what moto sends when it is not asked for ranges."""
        url = f"{endpoint}/{BUCKET}/{BUCKET_BIG}"
        times = []
        for _ in range(n):
            seconds, result = timed(["curl", "-sS", "--fail", "-o", "/dev/null", "-w", "%{size_download}", url], 600)
            if int(float(result.stdout.strip() or 0)) != size:
                raise BenchError(f"curl fetched {result.stdout} bytes")
            times.append(seconds)
        digest = run(f"curl -sS --fail '{url}' | openssl dgst -sha256 -r", 600, shell=True).stdout.split()[0]
        if digest != ctx.bucket["sha256"]:
            raise BenchError("curl returned wrong bytes")
        log(f"  bucket-read [curl, one GET] repeats: {', '.join(f'{size / t / 1e6:.0f}' for t in times)} MB/s")
        return size / median(times) / 1e6

    if aws:
        measure_cell(read, "baseline", aws_cp)
        try:
            read.note += f" boto3's download_file (in one process, start-up not counted): {boto3_download():.0f} MB/s."
        except BenchError as error:
            read.note += f" boto3's download_file: n/a ({error})."
    else:
        measure_cell(read, "baseline", boto3_download)
    try:
        read.note += (f" curl of the whole object in one unranged GET: {curl_whole():.0f} MB/s (moto reads the whole "
                      "object for every ranged GET, so on this server a reader's speed follows its number of requests).")
    except BenchError as error:
        read.note += f" curl of the whole object: n/a ({error})."

    def system_read(name):
        def measure():
            times, sent = [], []
            for _ in range(n):
                with mounted(ctx, name, "bucket") as m:
                    mark = MotoMark(ctx)
                    times.append(read_all(m.path(BUCKET_BIG), size))
                    sent.append(mark.requests())
                    if sha256_file(m.path(BUCKET_BIG)) != ctx.bucket["sha256"]:
                        raise BenchError(f"WRONG BYTES: sha256 of {BUCKET_BIG} through the mount differs")
            log(f"  bucket-read [{name}] repeats: {', '.join(f'{size / t / 1e6:.0f}' for t in times)} MB/s; "
                f"requests {sent}")
            read.note += f" {name}: {request_text(sent[-1])} for the lookup and the read (last repeat)."
            return size / median(times) / 1e6
        return measure

    for name in systems(ctx):
        if name != "httpdirfs":
            measure_cell(read, name, system_read(name))
    return rows


# ----------------------------------------------------------------------------- output

COLUMNS = ("rangefs", "baseline", "ratio", "target", "rclone", "httpdirfs")
# Tools measured in some rows only (aria2c: the mirror rows); their column shows when a row has them.
OPTIONAL_TOOLS = ("aria2c",)
OTHER_TOOLS = ("rclone", "httpdirfs") + OPTIONAL_TOOLS


def optional_tools(rows):
    return [tool for tool in OPTIONAL_TOOLS if any(tool in row.values for row in rows)]


def table_cells(row):
    cells = {}
    for key in ("rangefs", NONE_KEY, "baseline") + OTHER_TOOLS:
        value = row.values.get(key)
        cells[key] = "n/a" if isinstance(value, str) else fmt(value)
    ratio = row.ratio()
    show = ratio is not None and row.baseline_label not in ("target", "exact ranges")
    cells["ratio"] = f"{ratio:.2f}×" if show else ""
    met = row.met()
    cells["target"] = (row.target_text + (" ✓" if met else " ✗" if met is False else "")) if row.target_text else ""
    cost = row.background_cost()
    cells["cost"] = "" if cost is None else f"{cost * 100:+.0f} %"
    return cells


def policy_columns(rows):
    """The --prefetch none column and the background's cost, when runs with --prefetch none measured them."""
    return any(NONE_KEY in row.values for row in rows)


def print_table(rows):
    extra = optional_tools(rows)
    both = policy_columns(rows)
    header = (["row", "unit", "RangeFS"] + (["none", "cost"] if both else [])
              + ["baseline", "ratio", "target", "rclone", "httpdirfs"] + extra)
    lines = [header]
    for row in rows:
        c = table_cells(row)
        lines.append([row.label, row.unit, c["rangefs"]] + ([c[NONE_KEY], c["cost"]] if both else [])
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


def machine_info(ctx):
    mem = next(l for l in open("/proc/meminfo") if l.startswith("MemTotal")).split()[1]
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    commit = run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], 10, check=False).stdout.strip()
    dirty = run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no", "--", "Sources"], 10,
                check=False).stdout.strip()
    return {
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "cpus": f"{os.cpu_count()} × {cpu}",
        "memory": f"{int(mem) / 1024 / 1024:.1f} GiB",
        "kernel": os.uname().release,
        "load average (1/5/15 min) at the start": ctx.load_at_start,
        "load average (1/5/15 min) at the end": " ".join(open("/proc/loadavg").read().split()[:3]),
        "rangefs": tool_version([ctx.rangefs, "--version"]) + f" (commit {commit}{', Sources modified' if dirty else ''})",
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
        **(bucket_versions(ctx) if ctx.bucket else {}),
    }


def bucket_versions(ctx):
    python = ctx.bucket["python"]
    modules = run([python, "-c", "import boto3, moto; print(f'moto {moto.__version__}, boto3 {boto3.__version__}')"],
                  60, check=False).stdout.strip() or "?"
    return {"moto, boto3": modules, "aws": tool_version(["aws", "--version"])}


def md_escape(text):
    return text.replace("|", "\\|")


def write_markdown(ctx, rows, info, elapsed):
    a = ctx.args
    out = ["# RangeFS benchmarks", "",
           f"One run of `bench/run.sh` on {info['date']}, {elapsed / 60:.1f} minutes. Each figure is the median "
           f"of {a.repeats} repeats unless the row says otherwise; every whole-file read was checked against "
           "the original's sha256 (the timed pass reads to /dev/null, a pass right after hashes the same file "
           "through the same mount).", "",
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
             if any(row.link == "bucket" for row in rows) else []),
           (f"- RangeFS runs with its defaults (256 KiB blocks, --max-downloads 3) and `--prefetch {a.rangefs_prefetch}` "
            "in every row (`--rangefs-prefetch`)." if getattr(a, "rangefs_prefetch", None) else
            "- RangeFS runs with its defaults in every row (256 KiB blocks, --max-downloads 3, `--prefetch all`: "
            "the heads and tails of every file of the mount, then every file whole, in the background while the "
            "row's program reads), and again, right after each group, the same group with `--prefetch none` "
            "(the **none** column: no background work, a reader's own requests and read-ahead only). **cost** is "
            "how much longer (or slower) the defaults took than `--prefetch none` in the rows that time what a "
            "program waits for: what the background work cost the program, as far as two runs of a group minutes "
            "apart can tell (loopback rows move by 10–30 % between runs whatever the policy). The prefetcher row "
            "runs with the defaults only."),
           "- rclone: `rclone mount :http: --http-url URL --vfs-cache-mode full --read-only --daemon`; httpdirfs: "
           "`httpdirfs --cache --no-range-check URL` (nginx `autoindex on`). Both mount the same tree that the "
           "RangeFS manifests list.",
           "- Cold = a fresh mount with an empty cache for every repeat; mount time is not counted except in the "
           "mount-time row.",
           f"- fio: `--rw=randread --ioengine=psync --direct=1 --readonly`, one run of {a.fio_runtime} s per cell; "
           "the server's bytes are summed from nginx's access log ($body_bytes_sent).",
           "- Server, client and filesystem share the same 2 cores, so loopback rows are CPU-bound and move by "
           "tens of percent between runs, more when the machine is busy (load average below). The disk is a "
           "virtual disk: after `drop_caches` the host may still cache it, so \"disk\" is an upper-bound-ish "
           "figure that varies between runs.", ""]
    if ctx.notes:
        out += ["- " + n for n in ctx.notes] + [""]
    extra = optional_tools(rows)
    both = policy_columns(rows)
    out += ["## Results", "",
            "| row | unit | RangeFS | " + ("none | cost | " if both else "") + "baseline | ratio | target | rclone | "
            "httpdirfs | " + "".join(f"{tool} | " for tool in extra) + "baseline is |",
            "| --- | --- | ---: | " + ("---: | ---: | " if both else "") + "---: | ---: | --- | ---: | ---: | "
            + "---: | " * len(extra) + "--- |"]
    for row in rows:
        c = table_cells(row)
        out.append(f"| {md_escape(row.label.strip())} | {row.unit} | {c['rangefs']} | "
                   + (f"{c[NONE_KEY]} | {c['cost']} | " if both else "")
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
    if both:
        out.append(f"- background work cost a program more than {BACKGROUND_COST_LIMIT:.0%} (defaults against "
                   "`--prefetch none`) on: " + ("; ".join(f"{md_escape(r.label.strip())} ({table_cells(r)['cost']})"
                                                       for r in costly) or "no row"))
    out += ["", "![RangeFS, rclone and httpdirfs relative to the baseline of each row](benchmarks.png)", "",
            "## Machine and versions", ""]
    out += [f"- {k}: {md_escape(v)}" for k, v in info.items()]
    out += ["", "## Rerun", "",
            "```sh", "bench/run.sh                 # everything, each group with both policies; needs root (apt, drop_caches) and /dev/fuse",
            "bench/run.sh --repeats 5     # more repeats",
            "bench/run.sh --only cold,ttfb --skip-others   # a subset, RangeFS and the baselines only",
            "bench/run.sh --rangefs-prefetch none          # RangeFS with that --prefetch only",
            "```", "",
            "It installs fio, sox, rclone, httpdirfs, awscli, aria2, python3-mutagen and python3-matplotlib with apt (plus the "
            "project's own dependencies, moto and boto3 among them), builds `rangefs` in release mode, generates its data once "
            "into `bench/data/` (about 1.4 GiB, plus a 4 GiB sparse file), runs each group on each link with RangeFS's "
            "defaults beside the other tools and at once again with RangeFS alone and `--prefetch none`, and rewrites "
            "this page and `benchmarks.png`. "
            "Raw figures: `bench/data/results.json`.", ""]
    page = DOCS / "benchmarks.md"
    out += [KEPT_MARKER, kept_sections(page)]
    page.write_text("\n".join(out))


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


def write_chart(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib is missing: no chart")
        return
    colors = {"rangefs": "#1f77b4", "rclone": "#ff7f0e", "httpdirfs": "#2ca02c"}
    # Counts whose baseline is 0 (stalls) have no ratio to draw; the table shows them.
    rows = [r for r in rows if r.unit != "reads"]
    absolute_kinds = ("target", "exact ranges")
    relative = [r for r in rows if r.baseline_label not in absolute_kinds]
    absolute = [r for r in rows if r.baseline_label in absolute_kinds]

    def score(row, key):
        v, b = row.values.get(key), row.values.get("baseline")
        if not isinstance(v, (int, float)) or not isinstance(b, (int, float)) or v <= 0 or b <= 0:
            return None
        return v / b if row.better == "higher" else b / v

    height = 0.45 * len(relative) * 1.0 + 2
    fig = plt.figure(figsize=(15, height + 0.3 * len(absolute) * 3 + 2))
    grid = fig.add_gridspec(2, 1, height_ratios=[height, 0.9 * len(absolute) + 1.5], hspace=0.12)
    ax = fig.add_subplot(grid[0])
    bar = 0.26
    ys = list(range(len(relative)))
    scores = [score(r, k) for r in relative for k in SYSTEMS]
    scores = [v for v in scores if v]
    lo = min(scores + [0.5]) / 3
    hi = max(scores + [2.0]) * 4
    for i, key in enumerate(SYSTEMS):
        vals = [score(r, key) for r in relative]
        pos = [y + (i - 1) * bar for y in ys]
        ax.barh([p for p, v in zip(pos, vals) if v], [v for v in vals if v], height=bar, color=colors[key],
                label=key)
        for p, v, r in zip(pos, vals, relative):
            if v is None:
                ax.text(lo * 1.1, p, "n/a", va="center", fontsize=7, color="#888")
            else:
                ax.text(v * 1.08, p, f"{v:.2g}×", va="center", fontsize=7)
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_yticks(ys)
    ax.set_yticklabels([f"{r.label.strip()}\n(vs {r.baseline_label})" for r in relative], fontsize=7.5)
    ax.invert_yaxis()
    ax.set_xlabel("relative to the row's baseline (log scale; >1 = better than the baseline, "
                  "speeds: value ÷ baseline, times and bytes: baseline ÷ value)")
    ax.legend(loc="lower right")
    ax.grid(axis="x", which="both", alpha=0.3)
    ax.set_title("RangeFS benchmarks: each system relative to the link (curl) or local-disk baseline")
    if absolute:
        ax2 = fig.add_subplot(grid[1])
        ys = list(range(len(absolute)))
        numbers = [v for r in absolute for k, v in r.values.items()
                   if k != "baseline" and isinstance(v, (int, float)) and v > 0]
        lo2, hi2 = min(numbers + [1.0]) / 3, max(numbers + [64.0]) * 8
        ax2.set_xscale("log")
        ax2.set_xlim(lo2, hi2)
        for i, key in enumerate(SYSTEMS):
            vals = [r.values.get(key) for r in absolute]
            pos = [y + (i - 1) * bar for y in ys]
            good = [(p, v) for p, v in zip(pos, vals) if isinstance(v, (int, float)) and v > 0]
            ax2.barh([p for p, _ in good], [v for _, v in good], height=bar, color=colors[key])
            for p, v in zip(pos, vals):
                number = isinstance(v, (int, float)) and v > 0
                ax2.text((v if number else lo2) * 1.08, p, f"{v:.3g}" if number else "n/a", va="center",
                         fontsize=7, color="black" if number else "#888")
        for y, r in zip(ys, absolute):
            if r.target and r.target[0] == "abs<=":
                ax2.plot([r.target[1]] * 2, [y - 0.45, y + 0.45], color="red", linewidth=2)
            if r.baseline_label == "exact ranges":
                ax2.plot([1, 1], [y - 0.45, y + 0.45], color="black", linewidth=1, linestyle="--")
        ax2.set_yticks(ys)
        ax2.set_yticklabels([f"{r.label.strip()} ({r.unit})" for r in absolute], fontsize=7.5)
        ax2.invert_yaxis()
        ax2.set_xlabel("absolute value (log scale, lower is better); red line = the issue's target, "
                       "dashed = exact ranges (1×)")
        ax2.grid(axis="x", which="both", alpha=0.3)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


# ----------------------------------------------------------------------------- main

GROUPS = ["cold", "warm", "ttfb", "fio", "media", "ls", "parallel", "prefetch", "stream", "rss", "many", "web",
          "library", "bucket", "mirrors"]
# "stream" uses its own link; "bucket" its own server (moto), which the slow link's nginx does not
# front; "mirrors" its own three nginx.
PLAIN_ONLY = {"warm", "fio", "stream", "rss", "many", "bucket", "mirrors"}
# A library's first scan is a question for the distant link.
SLOW_ONLY = {"library"}


def check_tools(ctx):
    for system, tool in (("rangefs", ctx.rangefs), ("rclone", "rclone"), ("httpdirfs", "httpdirfs")):
        found = shutil.which(tool) or (os.path.isfile(tool) and os.access(tool, os.X_OK))
        ctx.available[system] = bool(found)
        if not found:
            ctx.available[system + "_why"] = f"{tool} is not installed"
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
    parser.add_argument("--mirror-rate", default="20m", help="nginx limit_rate of each of the three mirrors (per connection)")
    parser.add_argument("--only", default=",".join(GROUPS), help="comma-separated groups: " + ",".join(GROUPS))
    parser.add_argument("--links", default="plain,slow")
    parser.add_argument("--skip-others", action="store_true", help="RangeFS and the baselines only")
    parser.add_argument("--rangefs-prefetch", choices=["all", "opened", "none"],
                        help="mount RangeFS with this --prefetch in every row (default: each group with --prefetch all, "
                        "beside the other tools, then at once alone with --prefetch none)")
    parser.add_argument("--s3-python", help="a python3 with boto3 and moto for the bucket rows "
                        "(default: the first python3 on PATH that has them)")
    parser.add_argument("--work", default=str(BENCH / "data" / "work"))
    parser.add_argument("--no-docs", action="store_true", help="print the table only")
    parser.add_argument("--render-only", action="store_true",
                        help="rewrite docs/benchmarks.md and .png from bench/data/results.json")
    args = parser.parse_args()
    if args.render_only:
        saved = json.loads((DATA / "results.json").read_text())
        rows = [Row.from_json(r) for r in saved["rows"]]
        ctx = Context(argparse.Namespace(**saved["args"]))
        ctx.notes = saved["notes"]
        print_table(rows)
        write_markdown(ctx, rows, saved["machine"], saved["elapsed_s"])
        write_chart(rows, DOCS / "benchmarks.png")
        return
    if not args.rangefs:
        parser.error("--rangefs is required")
    groups = [g.strip() for g in args.only.split(",") if g.strip()]
    links = [l.strip() for l in args.links.split(",") if l.strip()]
    for g in groups:
        if g not in GROUPS:
            raise SystemExit(f"bench: unknown group {g!r}; groups: {', '.join(GROUPS)}")

    ctx = Context(args)

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
        write_manifests(ctx)
        start_servers(ctx)
        log(f"nginx on 127.0.0.1:{PLAIN_PORT} (plain) and :{SLOW_PORT}; "
            f"latency proxy on :{PROXY_PORT} ({args.rtt_ms:g} ms RTT, {rate_text(args.rate)} per connection)")
        measure = {
            "cold": lambda l: row_cold_sequential(ctx, l),
            "warm": lambda l: rows_warm(ctx),
            "ttfb": lambda l: row_ttfb(ctx, l),
            "fio": lambda l: rows_fio(ctx),
            "media": lambda l: rows_media(ctx, l),
            "ls": lambda l: rows_ls(ctx, l),
            "parallel": lambda l: row_parallel(ctx, l),
            "prefetch": lambda l: row_prefetch(ctx, l),
            "rss": lambda l: row_rss_sparse(ctx),
            "many": lambda l: rows_many(ctx),
            "web": lambda l: rows_web(ctx, l),
            "library": lambda l: rows_library(ctx, l),
            "bucket": lambda l: rows_bucket(ctx),
            "stream": lambda l: rows_streaming(ctx),
            "mirrors": lambda l: rows_mirrors(ctx),
        }
        # Each group on each link with RangeFS's defaults first (with the other tools), then at once,
        # unless one policy was asked for, the same group with RangeFS alone and --prefetch none: what
        # background work costs each row, the two measured minutes apart on the same machine load.
        policies = [args.rangefs_prefetch] if args.rangefs_prefetch else ["all", "none"]
        for group in GROUPS:
            if group not in groups:
                continue
            for link in links:
                if group in PLAIN_ONLY and link != "plain" or group in SLOW_ONLY and link != "slow":
                    continue
                for number, policy in enumerate(policies):
                    if group == "prefetch" and policy != "all":
                        log(f"== prefetch ({link}): skipped with --prefetch {policy} (the row is about --prefetch all)")
                        continue
                    ctx.policy, ctx.others = policy, number == 0 and not args.skip_others
                    log(f"== {group} ({link}), RangeFS --prefetch {policy}")
                    try:
                        measured = measure[group](link)
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
    results = {"machine": info, "args": vars(args), "elapsed_s": elapsed, "notes": ctx.notes,
               "rows": [r.to_json() for r in rows]}
    (DATA / "results.json").write_text(json.dumps(results, indent=1, ensure_ascii=False))
    if not args.no_docs:
        DOCS.mkdir(exist_ok=True)
        write_markdown(ctx, rows, info, elapsed)
        write_chart(rows, DOCS / "benchmarks.png")
        log("wrote docs/benchmarks.md and docs/benchmarks.png")
    log(f"done in {elapsed / 60:.1f} min")


if __name__ == "__main__":
    main()
