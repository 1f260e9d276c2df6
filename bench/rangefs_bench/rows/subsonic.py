"""The Subsonic rows (group subsonic): Supysonic over the slow link serving a 20-album library,
mounted by RangeFS (subsonic+http://) and by httpdirfs's sonic mode: a listing of the whole
library, a media server's two first scans, a cold track read, and a remount on the kept cache."""
from ..config import LIBRARY_OTHERS_TIMEOUT, LIBRARY_SCAN_TIMEOUT, SONIC_ROOT, SUBSONIC_PASSWORD, SUBSONIC_USER, MiB
from ..process import BenchError, log, median, run, timed
from ..context import mounted
from ..data import sha256_file, sonic_tracks
from ..results import Row, failed_cells, measure_cell
from ..primitives import read_all
from ..rows.library import ffprobe_output, mutagen_output, scan_library
from ..sources import download_url, start, subsonic_api
from ..tls import is_tls


def sonic_systems(ctx):
    return ["rangefs"] + (["httpdirfs"] if ctx.others else [])


def mount_command(ctx, system, base, tls):
    """How `system` mounts the Subsonic server at `base` (as Context.mount takes it): RangeFS by its
    subsonic+http(s):// URL with a password file, httpdirfs in sonic mode with ID3 layout (artist,
    album, song, as RangeFS's), its password on the command line as it takes it, and sent as the
    API's hex-encoded p=enc: (--sonic-insecure): Supysonic speaks API 1.12, older than the salted
    token (t, s) httpdirfs sends by default, which it refuses (error 10); httpdirfs then lists nothing."""
    def command(mnt, cache):
        if system == "rangefs":
            address = base.split("://", 1)[1]
            source = f"subsonic+{base.split('://')[0]}://{SUBSONIC_USER}@{address}/"
            return [ctx.rangefs, "mount", source, str(mnt), "--cache-dir", str(cache), "--prefetch", ctx.policy,
                    "--password-file", str(ctx.work / "subsonic" / "password")] + \
                (["--ca-file", str(ctx.tls.ca)] if tls else []), None
        return ["httpdirfs", "--cache", "--cache-location", str(cache), "--sonic-username", SUBSONIC_USER,
                "--sonic-password", SUBSONIC_PASSWORD, "--sonic-id3", "--sonic-insecure"] + \
            (["--cacert", str(ctx.tls.ca)] if tls else []) + [base + "/", str(mnt)], None
    return command


def count_files(out):
    return sum(1 for line in out.splitlines() if line.startswith("-"))


def rows_subsonic(ctx, link):
    """A Subsonic library over a distant link (40 ms, 2 MiB/s per connection): what a file manager
    and a media server's first scan cost each client, a track played whole, and a remount."""
    n = ctx.args.repeats
    tls = is_tls(link)
    tracks = sonic_tracks()
    size = sum((SONIC_ROOT / rel).stat().st_size for rel, _ in tracks)
    what = f"{len(tracks)}-MP3, 20-album library ({size / MiB:.0f} MiB)"
    ls = Row(f"subsonic-ls-{link}", f"Subsonic: mount, then ls -laR of a {what} ({link})", "ms", "lower",
             "the Subsonic calls of that tree with curl (one process)", link,
             note="Supysonic behind the latency proxy; from the start of the mount command to the end of ls -laR, "
                  "cache empty. The baseline fetches getArtists, each getArtist and each getAlbum in one curl. "
                  "httpdirfs one run each in every row.")
    again = Row(f"subsonic-ls-again-{link}", f"Subsonic: the same after a remount on the same cache ({link})", "ms",
                "lower", "the Subsonic calls of that tree with curl (one process)", link)
    scans = [("tags", "mutagen-inspect", lambda f: ["mutagen-inspect", f], mutagen_output),
             ("ffprobe", "ffprobe -show_format -show_streams",
              lambda f: ["ffprobe", "-v", "error", "-show_format", "-show_streams", "-of", "json", f], ffprobe_output)]
    scan_rows = [Row(f"subsonic-{rid}-{link}", f"Subsonic: first scan of the {what}: {label} per file ({link})", "s",
                     "lower", "the same scan of the local files", link,
                     note="A fresh mount and cache, the page cache dropped; find, then one process per file, one at "
                          "a time (mount time not counted); each output compared with the local scan's.")
                 for rid, label, _, _ in scans]
    rel, title = max(tracks, key=lambda t: (SONIC_ROOT / t[0]).stat().st_size)
    track_size = (SONIC_ROOT / rel).stat().st_size
    cold = Row(f"subsonic-track-{link}", f"Subsonic: cold read of a whole track, {track_size / MiB:.1f} MiB ({link})",
               "MB/s", "higher", "curl of its download", link,
               note="A fresh mount and cache, the track found by its title, the page cache dropped; dd bs=1M "
                    "(mount time not counted); the bytes checked by sha256.")
    rows = [ls, again] + scan_rows + [cold]
    try:
        base = start(ctx, "subsonic", tls)
        found = subsonic_api(ctx, base, "search3", query=title, songCount=5, artistCount=0, albumCount=0)
        songs = [s for s in found.get("searchResult3", {}).get("song", []) if s.get("title") == title]
        if not songs:
            raise BenchError(f"Supysonic does not list {title!r}")
        song_id = songs[0]["id"]
        artists = [a["id"] for index in subsonic_api(ctx, base, "getArtists")["artists"].get("index", [])
                   for a in index.get("artist", [])]
        albums = [al["id"] for a in artists for al in subsonic_api(ctx, base, "getArtist", id=a)["artist"].get("album", [])]
        if len(albums) != 20:
            raise BenchError(f"Supysonic lists {len(albums)} albums, expected 20")
    except BenchError as error:
        for row in rows:
            row.values["baseline"] = f"n/a: {error}"
        for name in sonic_systems(ctx):
            failed_cells(rows, name, f"the Subsonic server is not ready: {error}", "subsonic")
        return rows
    curl = ctx.curl(link)
    api = base + "/rest/{}.view?u=" + SUBSONIC_USER + "&p=" + SUBSONIC_PASSWORD + "&v=1.12.0&c=bench&f=json"
    tree = [api.format("getArtists")] + [api.format("getArtist") + f"&id={a}" for a in artists] + \
        [api.format("getAlbum") + f"&id={a}" for a in albums]

    def baseline_ls():
        args = sum((["-o", "/dev/null", url] for url in tree), [])
        return median([timed(curl + args, 300)[0] for _ in range(n)]) * 1000

    measure_cell(ls, "baseline", baseline_ls)
    again.values["baseline"] = ls.values["baseline"]
    expected = {}
    for row, (rid, label, command, normalize) in zip(scan_rows, scans):
        def baseline(command=command, normalize=normalize, rid=rid):
            times = []
            for _ in range(n):
                ctx.drop_caches()
                seconds, outputs = scan_library(SONIC_ROOT, command, normalize)
                if len(outputs) != len(tracks):
                    raise BenchError(f"the local scan found {len(outputs)} files, expected {len(tracks)}")
                expected[rid] = sorted(outputs.values())
                times.append(seconds)
            return median(times)
        measure_cell(row, "baseline", baseline)

    def baseline_track():
        url = download_url(base, song_id)
        times = []
        for _ in range(n):
            seconds, result = timed(curl + ["-o", "/dev/null", "-w", "%{size_download}", url], 600)
            if int(float(result.stdout.strip() or 0)) != track_size:
                raise BenchError(f"curl fetched {result.stdout} bytes, expected {track_size}")
            times.append(seconds)
        return track_size / median(times) / 1e6

    measure_cell(cold, "baseline", baseline_track)
    digest = sha256_file(SONIC_ROOT / rel)

    def ls_tree(m):
        seconds, result = timed(["ls", "-laR", str(m.mnt)], 600)
        if count_files(result.stdout) != len(tracks):
            raise BenchError(f"ls -laR listed {count_files(result.stdout)} files, expected {len(tracks)}")
        return seconds

    for name in sonic_systems(ctx):
        command = mount_command(ctx, name, base, tls)
        rangefs = name == "rangefs"
        repeats = n if rangefs else 1
        try:
            t_ls, t_again = [], []
            for _ in range(repeats):
                cache = ctx.new_dir("cache", f"{name}-{link}-sonic")
                with mounted(ctx, name, link, cache=cache, keep_cache=True, command=command) as m:
                    t_ls.append(m.mount_seconds + ls_tree(m))
                with mounted(ctx, name, link, cache=cache, command=command) as m:
                    t_again.append(m.mount_seconds + ls_tree(m))
            ls.values[name], again.values[name] = median(t_ls) * 1000, median(t_again) * 1000
            log(f"  subsonic [{name}] ls -laR {ls.values[name]:.0f} ms, again {again.values[name]:.0f} ms")
        except BenchError as error:
            failed_cells([ls, again], name, error, "subsonic")

        for row, (rid, label, scan, normalize) in zip(scan_rows, scans):
            def measure(rid=rid, scan=scan, normalize=normalize, command=command, repeats=repeats, rangefs=rangefs):
                if rid not in expected:
                    raise BenchError("no local scan to compare with")
                times = []
                for _ in range(repeats):
                    ctx.drop_caches()
                    with mounted(ctx, name, link, command=command) as m:
                        seconds, outputs = scan_library(m.mnt, scan, normalize,
                                                        LIBRARY_SCAN_TIMEOUT if rangefs else LIBRARY_OTHERS_TIMEOUT)
                    if sorted(outputs.values()) != expected[rid]:
                        differ = len(set(expected[rid]) - set(outputs.values()))
                        raise BenchError(f"the scan of {len(outputs)} files read {differ} differently than the local one")
                    times.append(seconds)
                return median(times)
            measure_cell(row, name, measure)

        def read_track(command=command, repeats=repeats):
            times = []
            for _ in range(repeats):
                with mounted(ctx, name, link, command=command) as m:
                    found = run(["find", str(m.mnt), "-type", "f", "-name", f"*{title}*"], 300).stdout.split("\n")
                    found = [f for f in found if f]
                    if len(found) != 1:
                        raise BenchError(f"{len(found)} files named like {title!r} in the mount")
                    ctx.drop_caches()
                    times.append(read_all(found[0], track_size, 600))
                    if sha256_file(found[0]) != digest:
                        raise BenchError("WRONG BYTES: the track's sha256 differs from the original")
            return track_size / median(times) / 1e6
        measure_cell(cold, name, read_track)
    return rows
