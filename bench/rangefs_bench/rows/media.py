"""The media rows (group media: ffprobe, mpg123 and sox of cold files) and the streaming rows
(group stream: real-time playback over a rate-limited link, and a cold read-through)."""
import hashlib
import json
import os
import shlex
import statistics
import threading
import time

from ..config import CLIP, MiB, SEEK_FRAMES, SONG, STREAM, STREAM_BYTES_PER_SECOND, WAV, WWW
from ..process import BenchError, log, median, run, timed
from ..context import mounted
from ..servers import rate_text
from ..results import Row, measure_cell, measure_cells
from ..primitives import systems
from ..tls import is_tls


def local_run(cmd, timeout=300):
    return run(cmd, timeout).stdout


def url_tool(ctx, link, cmd):
    """A media tool's command on a URL of `link`, and its environment (None: this process's): over
    https ffprobe verifies against the run's CA (-ca_file, -tls_verify 1), and mpg123 fetches
    https through curl (its external network backend), which takes the CA from CURL_CA_BUNDLE."""
    if not is_tls(link):
        return cmd, None
    ca = str(ctx.tls.ca)
    if cmd[0] == "ffprobe":
        return [cmd[0], "-ca_file", ca, "-tls_verify", "1"] + cmd[1:], None
    if cmd[0] == "mpg123":
        return [cmd[0], "--network", "curl"] + cmd[1:], {**os.environ, "CURL_CA_BUNDLE": ca}
    raise BenchError(f"{cmd[0]} has no way to trust the run's CA here")


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
                    seconds, result = timed(f"{shlex.join(ctx.curl(link))} '{ctx.url(link, rel)}' | sox -t wav - -n stat",
                                            300, shell=True)
                else:
                    cmd, env = url_tool(ctx, link, make(ctx.url(link, rel)))
                    seconds, result = timed(cmd, 300, env=env)
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

        measure_cells(row, baseline, system, systems(ctx))
    return rows


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


def rows_streaming(ctx, link):
    """On `link`: "stream", or its https twin "stream-tls"."""
    rel, seconds = STREAM, ctx.args.stream_seconds
    size = ctx.size(rel)
    link_text = f"{rate_text(ctx.args.stream_rate)} per connection + {ctx.args.rtt_ms:g} ms RTT"
    what = (f"Real-time playback of a 192 kb/s MP3 ({size / MiB:.0f} MiB, 10 min), {seconds:g} s of audio "
            f"clock, 16 KiB reads, link {link_text}")
    worst_row = Row("stream-worst", f"{what}: worst read after the first second", "ms", "lower",
                    "the same reader on the local file", link, ("abs<=", 50), "≤ 50 ms",
                    note="Each system mounts cold; one run per cell. The baseline reads the original file on local disk (page cache "
                         "dropped first when possible).")
    stall_row = Row("stream-stalls", f"{what}: reads over 50 ms after the first second", "reads", "lower",
                    "the same reader on the local file", link, ("abs<=", 0), "0")
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
            with mounted(ctx, name, link) as m:
                record(name, *play_realtime(m.path(rel), seconds, original))
        except BenchError as error:
            fail(name, error)
    return rows + [row_stream_read_through(ctx, link, link_text)]


STREAM_READ_THROUGH = 3 * MiB


def row_stream_read_through(ctx, link, link_text):
    """A cold read of the first 3 MiB of the streaming link's MP3 with dd, against curl of the same
    range: what a reader gets from read-ahead over a link that limits each connection."""
    rel, length = STREAM, STREAM_READ_THROUGH
    with open(WWW / rel, "rb") as f:
        expected = hashlib.sha256(f.read(length)).hexdigest()
    row = Row("stream-read-through", f"Cold read of a file's first {length // MiB} MiB, link {link_text}", "MB/s",
              "higher", "curl of the same range (one connection)", link, ("ratio>=", 6.0), "≥ 6× one connection")
    n = ctx.args.repeats

    def baseline():
        seconds, result = timed(ctx.curl(link) + ["-r", f"0-{length - 1}", "-o", "/dev/null",
                                                  "-w", "%{size_download}", ctx.url(link, rel)], 300)
        if int(float(result.stdout.strip() or 0)) != length:
            raise BenchError(f"curl fetched {result.stdout} bytes of the range")
        return length / seconds / 1e6

    def read_through(name):
        times = []
        for _ in range(n):
            with mounted(ctx, name, link) as m:
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
