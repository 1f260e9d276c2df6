"""The music library rows (group library): a media server's first scan of a mounted library with
mutagen-inspect and ffprobe, against the same scan of the local files; scan_rows makes the same
rows for the library on another server (the webdav and sftp groups)."""
import json
import os
import shutil
import time
from collections import namedtuple

from ..config import LIBRARY, LIBRARY_OTHERS_TIMEOUT, LIBRARY_SCAN_TIMEOUT, LIBRARY_TRACKS, MiB, WWW
from ..process import BenchError, log, median, run
from ..context import mounted
from ..servers import LogMark
from ..results import Row, measure_cell
from ..primitives import systems


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


# The two scans, as the rows name them, and what each reads of this library (strace of the local scans).
Scan = namedtuple("Scan", "rid label tool command normalize check reads")
SCANS = (
    Scan("tags", "mutagen-inspect", "mutagen-inspect", lambda f: ["mutagen-inspect", f], mutagen_output,
         check_mutagen, "mutagen-inspect reads about 70 KiB at the head of each file (the ID3v2 tag with its "
                        "cover, the first frame) and its last 160 bytes (ID3v1, APEv2): 6.6 MiB in all."),
    Scan("ffprobe", "ffprobe -show_format -show_streams", "ffprobe",
         lambda f: ["ffprobe", "-v", "error", "-show_format", "-show_streams", "-of", "json", f], ffprobe_output,
         check_ffprobe, "ffprobe reads the first 96 or 128 KiB of each file, nothing at its end: 10.3 MiB in all."),
)


def rows_library(ctx, link):
    """A first scan of a freshly mounted music library, as a media server or a tagger makes one
    (Jellyfin, Navidrome, beets open every file once): a tag reader (mutagen, the library beets and
    Picard read tags with) and ffprobe, one process per file, one file at a time. The baseline is
    the same scan of the local files. With --prefetch all RangeFS fetches the heads and tails of
    every file, then whole files, in the background while the scan runs."""
    directory = LIBRARY + "/"

    def traffic():
        LogMark.settle(ctx, link)     # the last run's dropped requests, logged late, are not ours
        mark = LogMark(ctx, link)
        return lambda: mark.traffic(ctx, link, directory)

    return scan_rows(ctx, link, "library", "", f"The web directory {directory} mounted by its URL (nginx's "
                     "autoindex)", systems(ctx), lambda name: mounted(ctx, name, link, listing=True, directory=directory),
                     traffic, f"the bytes nginx sent under /{directory} and its requests")


def scan_rows(ctx, link, group, title, source, names, mount, traffic, fetched, requests="requests"):
    """The library scans' rows of a group (ids `group`-SCAN-link, labels after `title`): each scan of
    the library mounted by `mount(name)` (a context manager; RangeFS the --repeats, the other
    `names` once), the baseline the same scan of the local files; each output compared with the
    local scan's. `source` says how the library is mounted; `traffic()`, called before a mount,
    returns what tells the bytes the server sent and their `requests` once it is unmounted;
    `fetched` says what those are."""
    n = ctx.args.repeats
    files = library_files()
    size = sum((WWW / LIBRARY / rel).stat().st_size for rel in files)
    others = " and ".join(name for name in names if name != "rangefs")
    rows = []
    for scan in SCANS:
        what = f"first scan of a {len(files)}-MP3 library ({size / MiB:.0f} MiB): {scan.label} per file ({link})"
        main = Row(f"{group}-{scan.rid}-{link}", title + what if title else what[:1].upper() + what[1:], "s",
                   "lower", "the same scan of the local files", link,
                   note=f"{source}, cold: a fresh mount, an empty cache, the page cache dropped; find, then one "
                        "process per file, one at a time (mount time not counted); the baseline scans the local "
                        "files, the page cache dropped. Each output is compared with the local scan's, which is "
                        "checked against the tags written. " + (f"{others} one run each. " if others else "")
                        + f"{scan.reads} Fetched: {fetched}, from the mount until the unmount right after the "
                        "scan (RangeFS: median of the repeats).")
        rows.append(main)
        expected = {}

        def baseline(scan=scan, expected=expected):
            if not shutil.which(scan.tool):
                raise BenchError(f"{scan.tool} is not installed (bench/run.sh installs it)")
            times = []
            for _ in range(n):
                ctx.drop_caches()
                seconds, outputs = scan_library(WWW / LIBRARY, scan.command, scan.normalize)
                if sorted(outputs) != files:
                    raise BenchError(f"the local scan found {len(outputs)} files, expected {len(files)}")
                scan.check(outputs)
                expected.update(outputs)
                times.append(seconds)
            return median(times)

        def system(row, name, scan=scan, expected=expected):
            def measure():
                if not expected:
                    raise BenchError("no local scan to compare with")
                rangefs = name == "rangefs"
                times, sent, counts = [], [], []
                for _ in range(n if rangefs else 1):
                    ctx.drop_caches()
                    counted = traffic()
                    with mount(name) as m:
                        seconds, outputs = scan_library(m.mnt, scan.command, scan.normalize,
                                                        LIBRARY_SCAN_TIMEOUT if rangefs else LIBRARY_OTHERS_TIMEOUT)
                    # Unmounted right after the scan: the background transfers stop there.
                    fetched_bytes, count = counted()
                    if sorted(outputs) != files:
                        raise BenchError(f"the scan found {len(outputs)} files, expected {len(files)}")
                    wrong = [rel for rel in files if outputs[rel] != expected[rel]]
                    if wrong:
                        raise BenchError(f"{scan.tool} read {len(wrong)} files differently than the local ones, "
                                         f"first {wrong[0]}")
                    times.append(seconds)
                    sent.append(fetched_bytes)
                    counts.append(count)
                text = f"{median(sent) / MiB:.1f} MiB in {median(counts):.0f} {requests}"
                row.note += f" {name} fetched {text}" + ("." if rangefs else f" ({times[0]:.1f} s, one run).")
                log(f"  {row.rid} [{name}] fetched {text}")
                return median(times)
            return measure

        measure_cell(main, "baseline", baseline)
        for name in names:
            measure_cell(main, name, system(main, name))
    return rows
