"""The fio rows (group fio): random reads cold and warm, and the bytes fetched per byte read.

Each cell is the median of --repeats runs of --fio-runtime seconds, each on a fresh mount with an
empty cache, so that the cost column can tell a cost from the run-to-run swing of a 2-core machine
(one run per cell could not: the same build's cost against --prefetch none went from -11 % to +56 %
between passes)."""
import statistics

from ..config import BIG, MID, MiB
from ..process import log, median
from ..context import mounted
from ..servers import LogMark
from ..results import Row, measure_cell
from ..primitives import (
    fio, fio_with_fallback, http_random_reads, rangefs_complete_data_file, read_all, systems, verify
)


def rows_fio(ctx, link):
    rel, size, runtime, n = MID, ctx.size(MID), ctx.args.fio_runtime, ctx.args.repeats
    rows = []
    for bs in ("4k", "128k"):
        bs_bytes = 4096 if bs == "4k" else 131072
        cold = Row(f"fio-{bs}-cold", f"fio randread {bs} psync, cold, {runtime} s over 64 MiB", "IOPS",
                   "higher", "Range GETs, 1 keep-alive connection", link)
        amp = Row(f"fio-{bs}-amp", f"  bytes from server ÷ bytes read (cold {bs}, {runtime} s)", "×",
                  "lower", "exact ranges", link,
                  ("abs<=", 2.0) if bs == "4k" else None, "≤ 2×" if bs == "4k" else "")
        warm = Row(f"fio-{bs}-warm", f"fio randread {bs} psync, warm, {runtime} s", "IOPS", "higher",
                   "fio on the local cache file", link)
        rows += [cold, amp, warm]
        amp.values["baseline"] = 1.0
        measure_cell(cold, "baseline", lambda: median(
            http_random_reads(ctx.url(link, rel), size, bs_bytes, runtime, ctx.tls.context()) for _ in range(n)))
        disk_iops = []
        for name in systems(ctx):
            def measure_cold(name=name):
                iops, amplification = [], []
                for _ in range(n):
                    with mounted(ctx, name, link) as m:
                        mark = LogMark(ctx, link)
                        result, direct = fio_with_fallback(m.path(rel), bs, runtime=runtime)
                    sent = mark.bytes_sent(rel)
                    iops.append(result["iops"])
                    amplification.append(sent / max(result["bytes"], 1))
                    if not direct and f"{name}: O_DIRECT" not in cold.note:
                        cold.note += f" {name}: O_DIRECT refused, ran with --direct=0 (fresh mount, cold page cache)."
                    log(f"  {cold.rid} [{name}] {result['iops']:.0f} IOPS, server sent {sent / MiB:.1f} MiB "
                        f"for {result['bytes'] / MiB:.1f} MiB read")
                amp.values[name] = statistics.median(amplification)
                return median(iops)
            measure_cell(cold, name, measure_cold)
            if isinstance(cold.values[name], str):
                amp.values[name] = cold.values[name]

            def measure_warm(name=name):
                iops = []
                for _ in range(n):
                    with mounted(ctx, name, link) as m:
                        read_all(m.path(rel), size)
                        verify(ctx, m.path(rel), rel)
                        if name == "rangefs":
                            disk_iops.append(fio(rangefs_complete_data_file(m, rel), bs, runtime=runtime, direct=1)["iops"])
                        mark = LogMark(ctx, link)
                        result, direct = fio_with_fallback(m.path(rel), bs, runtime=runtime)
                        if not direct and f"{name}: O_DIRECT" not in warm.note:
                            warm.note += f" {name}: O_DIRECT refused, ran with --direct=0 (page cache may serve)."
                    sent = mark.bytes_sent(rel)
                    if sent:
                        warm.note += f" {name} fetched {sent / MiB:.1f} MiB during a warm run."
                    iops.append(result["iops"])
                return median(iops)
            measure_cell(warm, name, measure_warm)
        warm.values["baseline"] = statistics.median(disk_iops) if disk_iops else "n/a: no RangeFS cache file"
    rows += row_sparse_amplification(ctx, link)
    return rows


def row_sparse_amplification(ctx, link):
    rel, ios = BIG, 2000
    row = Row("fio-4k-sparse-amp", f"  bytes from server ÷ bytes read ({ios} × 4 KiB at random in 512 MiB, cold)",
              "×", "lower", "exact ranges", link, ("abs<=", 2.0), "≤ 2×",
              note=f"fio --number_ios={ios}: each read lands in a different block, so this shows over-fetch "
                   "per miss, which a 10 s run over 64 MiB hides once the whole file is cached.")
    row.values["baseline"] = 1.0
    for name in systems(ctx):
        def measure(name=name):
            with mounted(ctx, name, link) as m:
                mark = LogMark(ctx, link)
                result, _ = fio_with_fallback(m.path(rel), "4k", number_ios=ios, timeout=300)
            return mark.bytes_sent(rel) / max(result["bytes"], 1)
        measure_cell(row, name, measure)
    return [row]
