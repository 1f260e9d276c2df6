"""The rows of whole-file reads: cold sequential (group cold), the CPU time a cold sequential read
costs each system and curl (cpu: over https, what TLS costs), the warm re-reads and the re-read
after a remount (warm), the first bytes of a cold file (ttfb), four parallel readers (parallel)
and the peak memory reading a 4 GiB file (rss)."""
import resource
import shutil
import statistics
import subprocess
import time

from ..config import BIG, MiB, PAR, SLOW_SEQ, SPARSE, TTFB_OFFSET
from ..process import BenchError, kill_group, log, median, run, timed
from ..context import cpu_seconds, mounted, vm_hwm_mib
from ..servers import LogMark
from ..results import Row, measure_cell, measure_cells
from ..tls import base_link
from ..primitives import (
    curl_seconds, curl_to_disk_seconds, curl_verify, disk_output, original_bytes, quiet_disk, rangefs_complete_data_file,
    read_all, systems, timed_pread, verify
)


def row_cold_sequential(ctx, link):
    rel = BIG if base_link(link) == "plain" else SLOW_SEQ
    mib = ctx.size(rel) // MiB
    row = Row(f"cold-seq-{link}", f"Cold sequential read, {mib} MiB ({link})", "MB/s", "higher",
              "curl -o FILE on the cache's disk", link, ("ratio>=", 0.90), "≥ 0.90× curl -o FILE")
    n = ctx.args.repeats

    def baseline():
        ceiling = statistics.median(curl_seconds(ctx, link, rel) for _ in range(n))
        times = [curl_to_disk_seconds(ctx, link, rel) for _ in range(n)]
        curl_verify(ctx, link, rel)
        row.note += f" curl -o /dev/null (the link's ceiling): {ctx.size(rel) / ceiling / 1e6:,.0f} MB/s."
        return ctx.size(rel) / median(times) / 1e6

    def system(name):
        def measure():
            times = []
            for _ in range(n):
                quiet_disk()  # before the mount: no background work starts meanwhile
                with mounted(ctx, name, link) as m:
                    times.append(read_all(m.path(rel), ctx.size(rel)))
                    verify(ctx, m.path(rel), rel)
            return ctx.size(rel) / median(times) / 1e6
        return measure

    measure_cells(row, baseline, system, systems(ctx))
    return [row]


def rows_warm(ctx, link):
    """Warm re-read on the same mount (page cache dropped, and hot), and after a remount."""
    rel, size, n = BIG, ctx.size(BIG), ctx.args.repeats
    dropped = Row("warm-dropped", "Warm re-read, same mount, page cache dropped, 512 MiB", "MB/s",
                  "higher", "local read of the cache file (dropped)", link, ("ratio>=", 0.90),
                  "≥ 0.90× disk")
    hot = Row("warm-hot", "Warm re-read, same mount, page cache hot, 512 MiB", "MB/s", "higher",
              "local read of the cache file (hot)", link, ("ratio>=", 0.90), "≥ 0.90× local")
    remount = Row("remount", "Re-read after remount, cache kept (page cache dropped), 512 MiB", "MB/s",
                  "higher", "local read of the cache file (dropped)", link, ("ratio>=", 0.90),
                  "≥ 0.90× disk")
    rows = [dropped, hot, remount]
    disk_file = {}

    for name in systems(ctx):
        def measure(name=name):
            m = ctx.mount(name, link)
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
                    disk_file["path"] = rangefs_complete_data_file(m, rel)
                    disk_file["baseline"] = measure_disk(ctx, disk_file["path"], size, n)
            finally:
                m.unmount()
            t_remount = []
            try:
                for _ in range(n):
                    ctx.drop_caches()
                    m2 = ctx.mount(name, link, cache=m.cache)
                    try:
                        mark = LogMark(ctx, link)
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
    # On plain loopback the target is absolute: a ratio to one range request of a curl process that
    # needs no stat, no FUSE round trips and no cache write asks for less than nothing costs.
    target, target_text = (("abs<=", 1.0), "≤ 1.0 ms") if link == "plain" else (("ratio<=", 1.5), "≤ 1.5× curl -r")
    row = Row(f"ttfb-{link}", f"First 4 KiB at offset 400 MiB of a cold file ({link})", "ms", "lower",
              "curl -r (one 4 KiB range request)", link, target, target_text,
              note="stat + open + pread(4 KiB) right after a fresh mount with an empty cache.")
    expected = original_bytes(rel, TTFB_OFFSET, 4096)
    out = ctx.work / "ttfb.out"

    def baseline():
        times = []
        for _ in range(n):
            result = run(ctx.curl(link) + ["-r", f"{TTFB_OFFSET}-{TTFB_OFFSET + 4095}", "-o", str(out),
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

    measure_cells(row, baseline, system, systems(ctx))
    return [row]


def row_parallel(ctx, link):
    rels, n = PAR[base_link(link)], ctx.args.repeats
    total = sum(ctx.size(r) for r in rels)
    row = Row(f"parallel-{link}", f"4 parallel cold readers, 4 × {ctx.size(rels[0]) // MiB} MiB ({link})",
              "MB/s", "higher", "4 parallel curl -o FILE on the cache's disk", link, ("ratio>=", 0.90),
              "≥ 0.90× 4 curls")

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
        def curls(output):
            return [ctx.curl(link) + ["-o", str(output(i)), ctx.url(link, r)] for i, r in enumerate(rels)]
        ceiling = statistics.median(together(curls(lambda i: "/dev/null")) for _ in range(n))
        outputs = [disk_output(ctx, f"parallel-{i}") for i in range(len(rels))]
        times = []
        try:
            for _ in range(n):
                quiet_disk()
                times.append(together(curls(lambda i: outputs[i])))
                for output in outputs:
                    output.unlink(missing_ok=True)
        finally:
            for output in outputs:
                output.unlink(missing_ok=True)
        row.note += f" 4 × curl -o /dev/null (the link's ceiling): {total / ceiling / 1e6:,.0f} MB/s."
        return total / median(times) / 1e6

    def system(name):
        def measure():
            times = []
            for _ in range(n):
                quiet_disk()
                with mounted(ctx, name, link) as m:
                    times.append(together([["dd", f"if={m.path(r)}", "of=/dev/null", "bs=1M"] for r in rels]))
                    for r in rels:
                        verify(ctx, m.path(r), r)
            return total / median(times) / 1e6
        return measure

    measure_cells(row, baseline, system, systems(ctx))
    return [row]


def row_rss_sparse(ctx, link):
    rel = SPARSE
    row = Row("rss-4g", "Peak RSS reading a 4 GiB file end to end (sparse on the server)", "MiB", "lower",
              "target", link, ("abs<=", 64), "≤ 64 MiB",
              note="VmHWM of the mount process after `dd bs=1M | openssl dgst -sha256` of the whole file.")
    row.values["baseline"] = 64.0
    speeds = {}
    for name in systems(ctx):
        def measure(name=name):
            with mounted(ctx, name, link) as m:
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


def row_cpu(ctx, link):
    """The CPU time a cold sequential read of the 512 MiB file costs: the mount's process (user +
    system, from /proc/PID/stat before and after the read) against curl -o's, each over the same
    link; on plain-tls beside plain, where TLS's cycles go. nginx's worker's time is in the note."""
    rel, size, n = BIG, ctx.size(BIG), ctx.args.repeats
    row = Row(f"cpu-seq-{link}", f"CPU time of a cold sequential read, {size // MiB} MiB ({link})", "CPU s", "lower",
              "curl -o /dev/null (its user + system time)", link,
              note="User + system seconds of the mount's process during the read (RangeFS mounts the file alone: "
                   "no other file to prefetch), of curl's process for the baseline; dd's own time (the kernel's "
                   "copies out of FUSE) is not counted.")
    server = {}

    def server_cpu(who, measure):
        """Runs measure() and notes nginx's worker's CPU seconds during it."""
        before = ctx.nginx_cpu_seconds()
        result = measure()
        server.setdefault(who, []).append(ctx.nginx_cpu_seconds() - before)
        return result

    def baseline():
        cpu, times = [], []
        for _ in range(n):
            def fetch():
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                times.append(curl_seconds(ctx, link, rel))
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            cpu.append(server_cpu("curl", fetch))
        row.note += f" curl: {size / statistics.median(times) / 1e6:.0f} MB/s."
        return median(cpu)

    def system(name):
        def measure():
            cpu, times = [], []
            for _ in range(n):
                with mounted(ctx, name, link, manifest="big") as m:
                    if not m.pid:
                        raise BenchError("mount process not found")

                    def read():
                        before = cpu_seconds(m.pid)
                        times.append(read_all(m.path(rel), size))
                        return cpu_seconds(m.pid) - before
                    cpu.append(server_cpu(name, read))
                    verify(ctx, m.path(rel), rel)
            row.note += f" {name}: {size / statistics.median(times) / 1e6:.0f} MB/s."
            return median(cpu)
        return measure

    measure_cells(row, baseline, system, systems(ctx))
    row.note += " nginx's worker, CPU s (median) while serving: " + ", ".join(
        f"{who} {statistics.median(values):.2f}" for who, values in server.items()) + "."
    return [row]
