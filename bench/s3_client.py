#!/usr/bin/env python3
"""The bucket rows' S3 client: puts the bench bucket and measures boto3's own figures.

bench.py runs on Debian's python3 (for matplotlib) and stays on the standard library, so it
runs this file with a python3 that has boto3 (bench/run.sh installs it). Prints one JSON
object on stdout.

  s3_client.py setup    --endpoint URL --bucket B --wide-dir DIR --wide-prefix P --big FILE --big-key K
  s3_client.py list     --endpoint URL --bucket B --prefix P --expect N --repeats R
  s3_client.py download --endpoint URL --bucket B --key K --out FILE --repeats R
  (each also takes --ca-file PEM: the CA of an https endpoint)

`setup` creates the bucket, puts every file of DIR under P and FILE as K (boto3's
upload_file: a multipart upload, as a big object usually is), all public-read so they can be
read unsigned. `list` times one ListObjectsV2 of P (delimiter '/', as a mount lists) per
repeat; `download` times boto3's download_file of K into FILE per repeat. Both read unsigned
and build their client before the clock starts, so Python's and boto3's start-up are not in
the figures.
"""
import argparse
import json
import os
import sys
import time

import boto3
from botocore import UNSIGNED
from botocore.config import Config


def client(args, signed):
    # moto accepts any key pair while its authentication is off; reads go unsigned, as a
    # public bucket's would. An https endpoint is verified against --ca-file.
    config = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                    signature_version=None if signed else UNSIGNED)
    return boto3.client("s3", endpoint_url=args.endpoint, region_name="us-east-1", config=config,
                        verify=args.ca_file or True, aws_access_key_id="bench", aws_secret_access_key="bench")


def setup(args):
    s3 = client(args, signed=True)
    start = time.perf_counter()
    s3.create_bucket(Bucket=args.bucket)
    names = sorted(os.listdir(args.wide_dir))
    for name in names:
        with open(os.path.join(args.wide_dir, name), "rb") as body:
            s3.put_object(Bucket=args.bucket, Key=args.wide_prefix + name, Body=body, ACL="public-read")
    s3.upload_file(args.big, args.bucket, args.big_key, ExtraArgs={"ACL": "public-read"})
    head = s3.head_object(Bucket=args.bucket, Key=args.big_key)
    if head["ContentLength"] != os.path.getsize(args.big):
        sys.exit(f"{args.big_key}: the server holds {head['ContentLength']} bytes")
    return {"seconds": time.perf_counter() - start, "wide": len(names), "big_etag": head["ETag"]}


def list_prefix(args):
    s3 = client(args, signed=False)
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        reply = s3.list_objects_v2(Bucket=args.bucket, Prefix=args.prefix, Delimiter="/")
        times.append(time.perf_counter() - start)
        if reply["KeyCount"] != args.expect or reply["IsTruncated"]:
            sys.exit(f"ListObjectsV2 of {args.prefix} gave {reply['KeyCount']} keys "
                     f"(truncated: {reply['IsTruncated']}), expected {args.expect}")
    return {"seconds": times}


def download(args):
    s3 = client(args, signed=False)
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        s3.download_file(args.bucket, args.key, args.out)
        times.append(time.perf_counter() - start)
    return {"seconds": times, "size": os.path.getsize(args.out)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["setup", "list", "download"])
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--bucket", required=True)
    parser.add_argument("--wide-dir")
    parser.add_argument("--wide-prefix")
    parser.add_argument("--big")
    parser.add_argument("--big-key")
    parser.add_argument("--prefix")
    parser.add_argument("--expect", type=int)
    parser.add_argument("--key")
    parser.add_argument("--out")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--ca-file", help="the CA that signed an https endpoint's certificate")
    args = parser.parse_args()
    result = {"setup": setup, "list": list_prefix, "download": download}[args.command](args)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
