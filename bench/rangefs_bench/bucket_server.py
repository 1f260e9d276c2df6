"""The S3 bucket of the bucket rows: moto's server on loopback (link "bucket"), and its https twin
(link "bucket-tls": a second moto serving TLS with the run's certificate, HTTP/1.1 only), the
bucket put on each with boto3 through bench/s3_client.py, how RangeFS and rclone mount it, and
MotoMark, which counts its requests."""
import json
import os
import re
import shutil
import subprocess
import sys
import time

from .config import BENCH, BUCKET, BUCKET_BIG, BUCKET_WIDE, S3_PORT, WEB_WIDE, WWW
from .process import BenchError, log, run
from .data import ensure_bucket_object
from .servers import port_open, wait_port, write_server_pids
from .tls import is_tls, scheme, twin_port


def s3_python(ctx):
    """A python3 that has boto3 and moto (bench.py itself runs on Debian's python3, which may
    not): --s3-python, else the first python3 on PATH, else this one."""
    candidates = [ctx.args.s3_python, shutil.which("python3"), sys.executable]
    for python in [c for c in candidates if c]:
        try:
            if run([python, "-c", "import boto3, moto.server"], 60, check=False).returncode == 0:
                return python
        except (BenchError, OSError):
            continue
    raise BenchError("no python3 with boto3 and moto (pip install 'moto[server]' boto3)")


def s3_client(ctx, link, *args, timeout=600):
    """Runs bench/s3_client.py with the bucket's python against `link`'s server; returns its JSON
    answer."""
    bucket = ctx.buckets[link]
    trust = ["--ca-file", str(ctx.tls.ca)] if is_tls(link) else []
    result = run([bucket["python"], str(BENCH / "s3_client.py"), *args, "--endpoint", bucket["endpoint"],
                  "--bucket", BUCKET, *trust], timeout)
    return json.loads(result.stdout)


def start_bucket(ctx, link):
    """Starts moto's S3 server for `link` ("bucket" on 127.0.0.1:S3_PORT, "bucket-tls" on its
    https twin's port; stopped on exit with the other servers) and puts the bench bucket: web/wide's
    1,000 files under wide/ and the 256 MiB object, all public-read. Once per run and link; the
    set-up time is logged, in no row."""
    if link in ctx.buckets:
        return
    python = s3_python(ctx)
    tls = is_tls(link)
    port = twin_port(S3_PORT, tls)
    if port_open(port):
        raise BenchError(f"something already listens on 127.0.0.1:{port}")
    big, sha256 = ensure_bucket_object()
    moto_log = ctx.work / f"moto-{link}.log"
    certificate = ["--ssl-cert", str(ctx.tls.cert), "--ssl-key", str(ctx.tls.key)] if tls else []
    with open(moto_log, "wb") as out:
        # moto_server's own module, run by the python that has it (the moto_server script
        # may not be on PATH).
        moto = subprocess.Popen([python, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port), *certificate],
                                start_new_session=True, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT)
    ctx.servers.append(moto)
    write_server_pids(ctx)
    wait_port(port, moto, "moto_server", timeout=60)
    ctx.buckets[link] = {"python": python, "endpoint": f"{scheme(tls)}://127.0.0.1:{port}", "sha256": sha256,
                         "log": moto_log}
    wide = WWW / "web" / "wide"
    answer = s3_client(ctx, link, "setup", "--wide-dir", str(wide), "--wide-prefix", BUCKET_WIDE + "/",
                       "--big", str(big), "--big-key", BUCKET_BIG)
    if answer["wide"] != WEB_WIDE:
        raise BenchError(f"put {answer['wide']} objects under {BUCKET_WIDE}/, expected {WEB_WIDE}")
    log(f"moto on {ctx.buckets[link]['endpoint']}: bucket {BUCKET} with {answer['wide']} objects under "
        f"{BUCKET_WIDE}/ and {BUCKET_BIG} (ETag {answer['big_etag']}) put in {answer['seconds']:.1f} s")


def bucket_mount_command(ctx, system, link, mnt, cache, prefetch):
    """How each system mounts `link`'s bench bucket, unsigned (its objects are public-read): the
    command and its environment (None: this process's). On "bucket-tls" each trusts the run's CA
    (ctx.trust_options)."""
    if link not in ctx.buckets:
        raise BenchError(f"the bucket of {link} is not set up")
    endpoint = ctx.buckets[link]["endpoint"]
    trust = ctx.trust_options(system) if is_tls(link) else []
    if system == "rangefs":
        return [ctx.rangefs, "mount", f"s3://{BUCKET}/", str(mnt), "--endpoint", endpoint, "--path-style",
                "--no-sign-request", "--cache-dir", str(cache), "--prefetch", prefetch, *trust], None
    if system == "rclone":
        # rclone's AWS SDK refuses AWS_CA_BUNDLE with rclone's own HTTP transport ("unable to
        # load custom CA bundle"), so it is left out; rclone trusts the run's CA by --ca-cert.
        env = {k: v for k, v in os.environ.items() if k != "AWS_CA_BUNDLE"}
        return ["rclone", "mount", f":s3:{BUCKET}", str(mnt), "--s3-provider", "Other",
                "--s3-endpoint", endpoint, "--s3-force-path-style", "--s3-env-auth=false",
                "--s3-access-key-id=", "--s3-secret-access-key=",
                "--config", str(ctx.work / "rclone.conf"), "--read-only",
                "--vfs-cache-mode", "full", "--cache-dir", str(cache),
                "--daemon", "--log-file", str(cache / "rclone.log"), "--log-level", "NOTICE", *trust], env
    raise BenchError(f"{system} cannot mount an S3 bucket")


class MotoMark:
    """Requests moto's server logged after this mark (Werkzeug logs one line per request),
    by kind: LIST for a GET of the bucket itself (ListObjects, V1 as rclone asks or V2),
    else the method."""

    def __init__(self, ctx, link):
        self.path = ctx.buckets[link]["log"]
        self.offset = self.path.stat().st_size

    def requests(self):
        """How many requests of each kind, e.g. {"LIST": 2, "HEAD": 1000}."""
        time.sleep(0.2)   # the log line is written as the request ends
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            text = f.read().decode(errors="replace")
        counts = {}
        for method, target in re.findall(r'"([A-Z]+) (\S+) HTTP/', text):
            kind = "LIST" if method == "GET" and target.split("?")[0].rstrip("/") == "/" + BUCKET else method
            counts[kind] = counts.get(kind, 0) + 1
        return counts


def request_text(counts):
    """{"LIST": 2, "HEAD": 1000} -> "1,002 requests (1,000 HEAD, 2 LIST)"."""
    parts = ", ".join(f"{n:,} {method}" for method, n in sorted(counts.items()))
    return f"{sum(counts.values()):,} requests" + (f" ({parts})" if parts else "")
