"""The mirror rows (group mirrors): one file on three nginx read through a Metalink, against curl
of one mirror and aria2c over the three, also with a mirror stopped half way; on plain-tls the
mirrors' https twins."""
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from ..config import (
    MIRROR_FILE, MIRROR_PIECE, MIRROR_PORTS, MIRROR_READ_TIMEOUT, MIRROR_ROOT, MIRROR_SIZE, MiB
)
from ..process import BenchError, kill_group, log, median, run, short, timed
from ..context import mounted
from ..data import ensure_mirror_file, sha256_file
from ..servers import LogMark, MirrorServer, rate_text
from ..results import Row, measure_cell, na_others
from ..primitives import verify
from ..tls import is_tls, twin_link


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


def rows_mirrors(ctx, link):
    """One file on three mirrors, each nginx limited per connection: RangeFS mounting a Metalink
    that names all three, against curl of one mirror and aria2c over the three; then the same
    with the busiest mirror stopped half way through the read. On "plain-tls" the mirrors are the
    https twins, and every client trusts the run's CA."""
    n, tls = ctx.args.repeats, is_tls(link)
    rate = ctx.args.mirror_rate
    sha256 = ensure_mirror_file()
    rel = MIRROR_FILE
    ctx.files[rel] = {"size": MIRROR_SIZE, "sha256": sha256}
    mirrors = [MirrorServer(ctx, i, MIRROR_ROOT, tls) for i in range(len(MIRROR_PORTS))]
    for m in mirrors:
        ctx.logs[twin_link(f"mirror{m.index + 1}", tls)] = m.log
    metalink = ctx.work / "manifests" / f"{twin_link('mirrors', tls)}.meta4"
    write_metalink(metalink, mirrors, rel, sha256)
    mib = MIRROR_SIZE // MiB
    read = Row("mirrors-read", f"3 mirrors ({rate_text(rate)} per connection each): cold sequential read, {mib} MiB", "MB/s",
               "higher", "curl of one mirror", link)
    failover = Row("mirrors-failover", "the same, the busiest mirror stopped half way through", "MB/s", "higher",
                   "curl of one mirror (no failure)", link)
    rows = [read, failover]
    if ctx.others:
        for row in rows:
            na_others(row, "one URL per file: a Metalink's mirrors cannot be mounted")
    counts = {row.rid: [] for row in rows}      # per repeat: (who, [(requests, MiB sent) per mirror])
    speeds = {row.rid: {} for row in rows}      # who -> MB/s of each repeat (text), or why it failed
    stopped_names = []

    def marks():
        return [LogMark(ctx, twin_link(f"mirror{m.index + 1}", tls)) for m in mirrors]

    def served(before):
        return [(mark.requests(), mark.bytes_sent(rel) / MiB) for mark in before]

    def restart_stopped():
        for m in mirrors:
            if not m.running():
                m.start()

    def curl_mirror():
        times = []
        for _ in range(n):
            seconds, result = timed(ctx.curl(link) + ["-o", "/dev/null", "-w", "%{size_download}", mirrors[0].url(rel)],
                                    600)
            if int(float(result.stdout.strip() or 0)) != MIRROR_SIZE:
                raise BenchError(f"curl fetched {result.stdout} bytes of {rel}")
            times.append(seconds)
        out = run(f"{shlex.join(ctx.curl(link))} '{mirrors[0].url(rel)}' | openssl dgst -sha256 -r", 600,
                  shell=True).stdout
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
            with mounted(ctx, "rangefs", link, source=metalink) as m:
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
                if tls:
                    cmd.append(f"--ca-certificate={ctx.tls.ca}")
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
        log(f"mirrors: nginx behind pacing proxies on {', '.join(m.url('') for m in mirrors)} "
            f"({rate_text(rate)} per connection each)")
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
