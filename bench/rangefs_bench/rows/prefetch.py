"""The prefetcher row (group prefetch): how long `--prefetch all` takes to complete a collection."""
import json
import time

from ..config import MiB
from ..process import BenchError, median, run, timed
from ..context import mounted
from ..results import Row, measure_cell, na_others
from ..primitives import verify


def row_prefetch(ctx, link):
    rels = [r for r in ctx.files if r.startswith(("media/", "small/"))]
    total = sum(ctx.size(r) for r in rels)
    n = ctx.args.repeats
    row = Row(f"prefetch-{link}", f"Prefetcher completes a collection, {len(rels)} files, "
              f"{total / MiB:.0f} MiB ({link})", "s", "lower", "curl -Z --parallel-max 3 of every URL", link,
              note="From the return of `rangefs mount --prefetch all` (default --max-downloads 3) until "
                   "`rangefs status --json` (polled every 0.1 s) shows every file complete.")

    def baseline():
        cmd = ctx.curl(link) + ["-Z", "--parallel-max", "3"]
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
