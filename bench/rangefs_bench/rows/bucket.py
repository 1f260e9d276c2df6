"""The bucket rows (group bucket): an S3 bucket on moto's server mounted by its s3:// URL, against
boto3 and the AWS CLI on the same server; over https on "bucket-tls" (moto serving TLS)."""
import os
import shlex
import shutil
from pathlib import Path

from ..config import BUCKET, BUCKET_BIG, BUCKET_BIG_SIZE, BUCKET_WIDE, MiB, SYSTEMS, WEB_WIDE, WWW
from ..process import BenchError, log, median, run, timed
from ..context import mounted
from ..data import sha256_file
from ..bucket_server import MotoMark, request_text, s3_client, start_bucket
from ..results import Row, failed_cells, measure_cell
from ..primitives import read_all, systems
from ..tls import is_tls


def rows_bucket(ctx, link):
    """An S3 bucket on `link`'s moto server ("bucket" or "bucket-tls"), mounted by its s3:// URL
    (RangeFS) or rclone's S3 backend, against boto3 and the AWS CLI on the same server in the same run."""
    n, size = ctx.args.repeats, BUCKET_BIG_SIZE
    ls_row = Row("bucket-ls", f"S3 bucket: mount, then ls -la of a {WEB_WIDE:,}-object prefix", "ms", "lower",
                 "boto3: one ListObjectsV2 of that prefix", link,
                 note="moto's S3 server on loopback (a Python server that closes every connection). From the "
                      "start of the mount command to the end of ls -la, cache empty; every "
                      "client unsigned (the objects are public-read). The baseline times the call alone, "
                      "its client made before.")
    again = Row("bucket-ls-again", "S3 bucket: the same after a remount on the same cache", "ms", "lower",
                "boto3: one ListObjectsV2 of that prefix", link)
    aws = shutil.which("aws")
    read = Row("bucket-read", f"S3 bucket: cold sequential read of a {size // MiB} MiB object", "MB/s", "higher",
               "aws s3 cp to tmpfs" if aws else "boto3 download_file to tmpfs", link,
               note="Fresh mount and empty cache per repeat (mount time not counted), dd bs=1M to /dev/null, "
                    "then the object's sha256 read through the same mount. The multipart object was put with "
                    "boto3's upload_file (ETag of 32 parts).")
    rows = [ls_row, again, read]
    try:
        start_bucket(ctx, link)
    except BenchError as error:
        for row in rows:
            for key in ("baseline",) + SYSTEMS:
                row.values[key] = f"n/a: {error}"
        log(f"  bucket n/a: {error}")
        return rows
    bucket = ctx.buckets[link]
    endpoint = bucket["endpoint"]
    # The AWS CLI trusts the run's CA by --ca-bundle (its own option, not the environment).
    aws_options = ["--endpoint-url", endpoint, "--no-sign-request"] + (["--ca-bundle", str(ctx.tls.ca)]
                                                                      if is_tls(link) else [])
    expected = {p.name: p.stat().st_size for p in (WWW / "web" / "wide").iterdir()}

    def baseline_ls():
        seconds = s3_client(ctx, link, "list", "--prefix", BUCKET_WIDE + "/", "--expect", str(WEB_WIDE),
                            "--repeats", str(n))["seconds"]
        log(f"  bucket-ls [baseline] repeats: {', '.join(f'{s * 1000:.0f}' for s in seconds)} ms")
        return median(seconds) * 1000

    measure_cell(ls_row, "baseline", baseline_ls)
    again.values["baseline"] = ls_row.values["baseline"]
    if aws:
        def aws_ls():
            times = []
            for _ in range(n):
                seconds, result = timed([aws, "s3", "ls", f"s3://{BUCKET}/{BUCKET_WIDE}/"] + aws_options, 120)
                if len(result.stdout.splitlines()) != WEB_WIDE:
                    raise BenchError(f"aws s3 ls listed {len(result.stdout.splitlines())} objects")
                times.append(seconds)
            return median(times) * 1000
        try:
            ls_row.note += f" `aws s3 ls` of the prefix, a process with its start-up: {aws_ls():.0f} ms."
        except BenchError as error:
            ls_row.note += f" `aws s3 ls`: n/a ({error})."

    def ls_wide(m):
        seconds, result = timed(["ls", "-la", m.path(BUCKET_WIDE)], 600)
        listed = {l.split()[-1]: int(l.split()[4]) for l in result.stdout.splitlines() if l.startswith("-")}
        if listed != expected:
            raise BenchError(f"ls -la showed {len(listed)} files, expected {len(expected)}"
                             + (" (names or sizes differ)" if len(listed) == len(expected) else ""))
        return seconds

    for name in systems(ctx):
        if name == "httpdirfs":
            for row in rows:
                row.values[name] = "n/a: httpdirfs mounts HTTP directory listings, not S3 buckets"
            continue
        try:
            t_cold, t_again, sent, sent_again = [], [], [], []
            for _ in range(n):
                cache = ctx.new_dir("cache", f"{name}-bucket")
                mark = MotoMark(ctx, link)
                with mounted(ctx, name, link, cache=cache, keep_cache=True) as m:
                    t_cold.append(m.mount_seconds + ls_wide(m))
                    sent.append(mark.requests())
                mark = MotoMark(ctx, link)
                with mounted(ctx, name, link, cache=cache) as m:
                    t_again.append(m.mount_seconds + ls_wide(m))
                    sent_again.append(mark.requests())
            ls_row.values[name], again.values[name] = median(t_cold) * 1000, median(t_again) * 1000
            ls_row.note += f" {name}: {request_text(sent[-1])} to the server for mount and ls (last repeat)."
            again.note += f" {name}: {request_text(sent_again[-1])} (last repeat)."
            log(f"  bucket-ls [{name}] repeats: {', '.join(f'{t * 1000:.0f}' for t in t_cold)} ms, requests {sent}; "
                f"again: {', '.join(f'{t * 1000:.0f}' for t in t_again)} ms, requests {sent_again}")
        except BenchError as error:
            failed_cells((ls_row, again), name, error, "bucket-ls")

    scratch = Path("/dev/shm") if os.path.isdir("/dev/shm") else ctx.work
    target = scratch / f"rangefs-bench-{os.getpid()}.bin"

    def check_copy():
        try:
            if not target.exists():
                raise BenchError(f"no copy of {BUCKET_BIG} was written")
            if target.stat().st_size != size or sha256_file(target) != bucket["sha256"]:
                raise BenchError(f"WRONG BYTES: the copy of {BUCKET_BIG} differs from the original")
        finally:
            target.unlink(missing_ok=True)

    def aws_cp():
        times = []
        try:
            for _ in range(n):
                seconds, _ = timed([aws, "s3", "cp", f"s3://{BUCKET}/{BUCKET_BIG}", str(target), *aws_options,
                                    "--only-show-errors"], 600)
                check_copy()
                times.append(seconds)
        finally:
            target.unlink(missing_ok=True)
        log(f"  bucket-read [aws s3 cp] repeats: {', '.join(f'{size / t / 1e6:.0f}' for t in times)} MB/s")
        return size / median(times) / 1e6

    def boto3_download():
        try:
            seconds = s3_client(ctx, link, "download", "--key", BUCKET_BIG, "--out", str(target),
                                "--repeats", str(n))["seconds"]
            check_copy()
        finally:
            target.unlink(missing_ok=True)
        log(f"  bucket-read [boto3 download_file] repeats: {', '.join(f'{size / t / 1e6:.0f}' for t in seconds)} MB/s")
        return size / median(seconds) / 1e6

    def curl_whole():
        """One GET of the whole object: what moto sends when it is not asked for ranges."""
        url = f"{endpoint}/{BUCKET}/{BUCKET_BIG}"
        times = []
        for _ in range(n):
            seconds, result = timed(ctx.curl(link) + ["-o", "/dev/null", "-w", "%{size_download}", url], 600)
            if int(float(result.stdout.strip() or 0)) != size:
                raise BenchError(f"curl fetched {result.stdout} bytes")
            times.append(seconds)
        digest = run(f"{shlex.join(ctx.curl(link))} '{url}' | openssl dgst -sha256 -r", 600, shell=True).stdout.split()[0]
        if digest != bucket["sha256"]:
            raise BenchError("curl returned wrong bytes")
        log(f"  bucket-read [curl, one GET] repeats: {', '.join(f'{size / t / 1e6:.0f}' for t in times)} MB/s")
        return size / median(times) / 1e6

    if aws:
        measure_cell(read, "baseline", aws_cp)
        try:
            read.note += f" boto3's download_file (in one process, start-up not counted): {boto3_download():.0f} MB/s."
        except BenchError as error:
            read.note += f" boto3's download_file: n/a ({error})."
    else:
        measure_cell(read, "baseline", boto3_download)
    try:
        read.note += (f" curl of the whole object in one unranged GET: {curl_whole():.0f} MB/s (moto reads the whole "
                      "object for every ranged GET, so on this server a reader's speed follows its number of requests).")
    except BenchError as error:
        read.note += f" curl of the whole object: n/a ({error})."

    def system_read(name):
        def measure():
            times, sent = [], []
            for _ in range(n):
                with mounted(ctx, name, link) as m:
                    mark = MotoMark(ctx, link)
                    times.append(read_all(m.path(BUCKET_BIG), size))
                    sent.append(mark.requests())
                    if sha256_file(m.path(BUCKET_BIG)) != bucket["sha256"]:
                        raise BenchError(f"WRONG BYTES: sha256 of {BUCKET_BIG} through the mount differs")
            log(f"  bucket-read [{name}] repeats: {', '.join(f'{size / t / 1e6:.0f}' for t in times)} MB/s; "
                f"requests {sent}")
            read.note += f" {name}: {request_text(sent[-1])} for the lookup and the read (last repeat)."
            return size / median(times) / 1e6
        return measure

    for name in systems(ctx):
        if name != "httpdirfs":
            measure_cell(read, name, system_read(name))
    return rows
