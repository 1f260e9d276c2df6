"""The measuring primitives the rows share: timed whole-file reads and their sha256 checks, curl
of a link, a timed pread, fio, Range GETs on one connection, the RangeFS cache's own data
file, and the systems a group measures."""
import http.client
import json
import os
import random
import re
import shlex
import sqlite3
import threading
import time
import urllib.parse

from .config import SYSTEMS, WWW
from .process import BenchError, run, timed
from .data import sha256_file


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


def curl_seconds(ctx, link, rel, timeout=600, out="/dev/null"):
    seconds, result = timed(ctx.curl(link) + ["-o", str(out), "-w", "%{size_download}", ctx.url(link, rel)],
                            timeout)
    if int(float(result.stdout.strip() or 0)) != ctx.size(rel):
        raise BenchError(f"curl fetched {result.stdout} bytes of {rel}")
    return seconds


def disk_output(ctx, name):
    """A file for a baseline's download on the disk the mounts' caches live on (a filesystem that
    keeps what it reads writes every byte once: `curl -o FILE` is the fair baseline, `-o /dev/null`
    the link's ceiling)."""
    folder = ctx.work / "cache"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"baseline-{name}.out"


def quiet_disk():
    """Writes back what earlier repeats left dirty, untimed: a timed read that stores what it reads
    then starts on a quiet disk, the baseline's as every system's (a repeat that began during the
    writeback of the one before measured the disk's backlog, not the reader)."""
    os.sync()


def curl_to_disk_seconds(ctx, link, rel, name="curl", timeout=600):
    out = disk_output(ctx, name)
    try:
        quiet_disk()
        return curl_seconds(ctx, link, rel, timeout, out)
    finally:
        out.unlink(missing_ok=True)


def curl_verify(ctx, link, rel, timeout=600):
    out = run(f"{shlex.join(ctx.curl(link))} '{ctx.url(link, rel)}' | openssl dgst -sha256 -r", timeout,
              shell=True).stdout
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


def rangefs_complete_data_file(mount, rel, timeout=30):
    """The cache's own data file for a path of a RangeFS mount once the file is complete: a file
    read whole is promoted (its data file renamed) at its next commit, up to a second later, and
    a path taken before that would be gone when fio opens it."""
    deadline = time.monotonic() + timeout
    while True:
        path = rangefs_data_file(mount, rel)
        if not path.name.endswith(".part"):
            return path
        if time.monotonic() >= deadline:
            raise BenchError(f"{rel} was not promoted to complete within {timeout} s of being read whole")
        time.sleep(0.05)


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


def http_random_reads(url, size, bs, seconds, tls_context=None):
    """The link's figure for random reads: one keep-alive connection, one Range GET of
    `bs` bytes at a random aligned offset at a time (what a psync job asks for). An https URL
    is fetched with `tls_context` (HTTP/1.1: Python's client speaks no HTTP/2)."""
    parsed = urllib.parse.urlsplit(url)
    rng = random.Random(42)
    if parsed.scheme == "https":
        conn = http.client.HTTPSConnection(parsed.hostname, parsed.port, timeout=30, context=tls_context)
    else:
        conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)
    rest = parsed.path.lstrip("/")
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


def systems(ctx):
    return [s for s in SYSTEMS if s == "rangefs" or ctx.others]
