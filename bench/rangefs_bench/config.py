"""Where the benchmark keeps its data and documents, the ports of its servers, and the files
and sizes each group reads: the constants every other module shares."""
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent.parent
BENCH = ROOT / "bench"
DATA = BENCH / "data"
WWW = DATA / "www"
DOCS = ROOT / "docs"
MiB = 1 << 20
DATA_VERSION = "v1"

PLAIN_PORT, SLOW_PORT, PROXY_PORT = 18480, 18481, 18482


def project_relative(text):
    """The text with paths inside the project named from its root: the page and its figures are
    published, so they never carry the machine's own paths (the binary's, the work directory's, a
    failed command's)."""
    return text.replace(f"{ROOT}/", "")
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
# The mirror rows: one file served by three nginx, each behind a proxy that limits each
# connection; clients use MIRROR_PORTS, the nginx listen MIRROR_NGINX_OFFSET above them.
MIRROR_PORTS, MIRROR_NGINX_OFFSET = (18490, 18491, 18492), 20
MIRROR_ROOT = DATA / "mirrors"
MIRROR_FILE, MIRROR_SIZE, MIRROR_PIECE = "big256.bin", 256 * MiB, 4 * MiB
MIRROR_READ_TIMEOUT = 300       # s; one mirror alone serves the file in about 13 s
# The https twins: each plain server's twin (nginx with TLS and HTTP/2, its latency or pacing proxy,
# each mirror, moto) listens TLS_PORT_OFFSET above it, and its link is named with TLS_SUFFIX
# ("plain-tls" is the https twin of "plain").
TLS_PORT_OFFSET, TLS_SUFFIX = 100, "-tls"
# The WebDAV rows: Apache's mod_dav serving bench/data/www under /dav/, behind a latency proxy
# as the slow link's nginx is; the Subsonic rows: Supysonic (on waitress) serving SONIC_ROOT,
# behind its own. Clients use the proxies; each server's https twin is an nginx TLS and HTTP/2
# front TLS_PORT_OFFSET above it, with its proxy TLS_PORT_OFFSET above the plain one.
WEBDAV_PORT, WEBDAV_PROXY_PORT = 18486, 18487
SUBSONIC_PORT, SUBSONIC_PROXY_PORT = 18488, 18489
SUBSONIC_USER, SUBSONIC_PASSWORD = "bench", "bench-sonic-password"
# The Subsonic library: 20 albums (artists x albums) of tracks remuxed, with new tags, from the
# music library's MP3s (made on first use; a new SONIC_VERSION makes it again).
SONIC_ROOT, SONIC_VERSION = DATA / "sonic", "v1"
SONIC_ALBUMS, SONIC_TRACKS = 4, 3               # per artist of LIBRARY_ARTISTS: 20 albums, 60 MP3s
WEBDAV_OFFSET = 48 * MiB                        # the first-bytes row's offset in MID
# The SFTP rows: OpenSSH's sshd with a configuration, host key and user key made for the run, running
# the sftp-server Debian's sshd runs (its log to a file: internal-sftp could log to syslog alone),
# clients reading bench/data/www by its absolute path through a latency proxy as the WebDAV
# server's. SFTP has no https twin: the group runs on the slow link alone.
SFTP_PORT, SFTP_PROXY_PORT = 18493, 18494
SFTP_SERVER = "/usr/lib/openssh/sftp-server"
