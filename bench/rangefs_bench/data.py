"""The files the benchmark serves, generated once into bench/data (the main set, the web trees,
the music library, the streaming MP3, the mirrors' and the bucket's big files), and the
RangeFS manifests that list them."""
import json
import os
import random
import shutil
import tempfile
from pathlib import Path

from .config import (
    BIG, BUCKET_BIG_SIZE, CLIP, DATA, DATA_VERSION, FLAC, LIBRARY, LIBRARY_ALBUMS, LIBRARY_ARTISTS,
    LIBRARY_BODIES, LIBRARY_TRACKS, LIBRARY_VERSION, MANY_DIRS, MANY_FLAT, MANY_PER_DIR, MID,
    MIRROR_FILE, MIRROR_ROOT, MIRROR_SIZE, MiB, PAR, ROOT, SLOW_SEQ, SONG, SONIC_ALBUMS, SONIC_ROOT,
    SONIC_TRACKS, SONIC_VERSION, SPARSE, STREAM, WAV,
    WEB_DIRS, WEB_PER_DIR, WEB_WIDE, WWW
)
from .process import log, run


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
        # "big": the 512 MiB file alone, for rows where other files' prefetching would blur the figure.
        for name, rels in (("main", main), ("collection", collection), ("big", [BIG])):
            ctx.manifest(link, name).write_text("".join(f"{rel}\t{base}/{rel}\n" for rel in rels))
        many = [f"many/flat/f{i:05d}.bin" for i in range(MANY_FLAT)]
        many += [f"many/d{d:03d}/f{j:03d}.bin" for d in range(MANY_DIRS) for j in range(MANY_PER_DIR)]
        ctx.manifest(link, "many").write_text("".join(f"{rel}\t{base}/{rel}\n" for rel in many))


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


def sonic_names():
    """(artist, album, year, [(track, title)...]) of each album of the Subsonic library: every
    title unique, so that a track can be found by its title under any server's layout."""
    words = ("Amber", "Bridges", "Cinder", "Dunes", "Ember", "Fathom", "Granite", "Halcyon", "Inlet", "Juniper",
             "Kestrel", "Lantern", "Meridian", "Nettle", "Onyx", "Pylon", "Quarry", "Rook", "Sable", "Tundra")
    rng = random.Random(23)
    albums, number = [], 0
    for a, artist in enumerate(LIBRARY_ARTISTS):
        for b in range(SONIC_ALBUMS):
            album = " ".join(rng.sample(words, 2)) + f" {a * SONIC_ALBUMS + b + 1}"
            tracks = []
            for track in range(1, SONIC_TRACKS + 1):
                number += 1
                tracks.append((track, f"{rng.choice(words)} No {number}"))
            albums.append((artist, album, 1980 + a * SONIC_ALBUMS + b, tracks))
    return albums


def sonic_tracks():
    """The Subsonic library's MP3s, by their paths under SONIC_ROOT, with their titles."""
    return [(f"{artist}/{album}/{track:02d} {title}.mp3", title)
            for artist, album, _, tracks in sonic_names() for track, title in tracks]


def ensure_sonic_library():
    """The Subsonic rows' library, made the first time it is missing: 20 albums of MP3s whose
    audio and cover are the music library's (muxed with -c copy, no encoding) with tags of their
    own (title, artist, album, track, year), so that Supysonic lists 20 albums."""
    marker = SONIC_ROOT / f".complete-{SONIC_VERSION}"
    if marker.exists():
        return
    ensure_library()
    log("generating sonic/ (once)")
    shutil.rmtree(SONIC_ROOT, ignore_errors=True)
    sources = sorted((WWW / LIBRARY).rglob("*.mp3"))
    ff = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y"]
    index = 0
    for artist, album, year, tracks in sonic_names():
        for track, title in tracks:
            path = SONIC_ROOT / artist / album / f"{track:02d} {title}.mp3"
            path.parent.mkdir(parents=True, exist_ok=True)
            run(ff + ["-i", str(sources[(index * 7) % len(sources)]), "-map", "0", "-map_metadata", "-1",
                      "-c", "copy", "-id3v2_version", "3", "-metadata", f"title={title}", "-metadata", f"artist={artist}",
                      "-metadata", f"album={album}", "-metadata", f"track={track}/{SONIC_TRACKS}",
                      "-metadata", f"date={year}", "-metadata:s:v", "title=Album cover",
                      "-metadata:s:v", "comment=Cover (front)", str(path)], 120)
            index += 1
    run(["chmod", "-R", "a+rX", str(SONIC_ROOT)], 60)
    marker.write_text("ok\n")
