#!/usr/bin/env python3
"""Sets up buckets on an S3-compatible test server (moto's server mode) with boto3.

Usage: s3-bucket.py ENDPOINT < steps.json

The steps are a JSON list; each is an object with an "op":
  {"op": "bucket", "name": B}                                 create a bucket
  {"op": "put", "bucket": B, "key": K, "file": PATH}          upload a file
  {"op": "put", "bucket": B, "key": K, "text": T}             upload a short text
                                                               ("public": true on either: readable
                                                               without signing, ACL public-read)
  {"op": "put-many", "bucket": B, "prefix": P, "count": N}    N small objects P00000 ... (text "object i",
                                                               "public" as for put)
  {"op": "delete", "bucket": B, "key": K}                     delete an object
  {"op": "user", "name": U, "policy": {...}}                  an IAM user with an inline policy;
                                                               its keys are printed
  {"op": "role", "name": R, "user": U, "policy": {...}}       a role the user may assume, with that
                                                               policy; temporary keys (with a session
                                                               token) from STS are printed
  {"op": "enable-auth"}                                       from now on every request must be
                                                               signed by a known key (moto only)
Prints one JSON object: {"users": {U: {...}}, "roles": {R: {...}}}.
"""
import json
import sys

import boto3
import urllib.request

endpoint = sys.argv[1]
session = boto3.session.Session(aws_access_key_id="AKIASETUPSETUPSETUP0", aws_secret_access_key="setup-secret",
                                region_name="us-east-1")
s3 = session.client("s3", endpoint_url=endpoint)
iam = session.client("iam", endpoint_url=endpoint)
printed = {"users": {}, "roles": {}}

for step in json.load(sys.stdin):
    op = step["op"]
    if op == "bucket":
        s3.create_bucket(Bucket=step["name"])
    elif op == "put":
        body = open(step["file"], "rb") if "file" in step else step["text"].encode()
        extra = {"ACL": "public-read"} if step.get("public") else {}
        s3.put_object(Bucket=step["bucket"], Key=step["key"], Body=body, **extra)
    elif op == "put-many":
        for i in range(step["count"]):
            extra = {"ACL": "public-read"} if step.get("public") else {}
            s3.put_object(Bucket=step["bucket"], Key="%s%05d" % (step["prefix"], i), Body=b"object %d" % i, **extra)
    elif op == "delete":
        s3.delete_object(Bucket=step["bucket"], Key=step["key"])
    elif op == "user":
        iam.create_user(UserName=step["name"])
        iam.put_user_policy(UserName=step["name"], PolicyName="p", PolicyDocument=json.dumps(step["policy"]))
        key = iam.create_access_key(UserName=step["name"])["AccessKey"]
        printed["users"][step["name"]] = {"AccessKeyId": key["AccessKeyId"], "SecretAccessKey": key["SecretAccessKey"]}
    elif op == "role":
        trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                         "Principal": {"AWS": "*"}}]}
        role = iam.create_role(RoleName=step["name"], AssumeRolePolicyDocument=json.dumps(trust))["Role"]
        iam.put_role_policy(RoleName=step["name"], PolicyName="p", PolicyDocument=json.dumps(step["policy"]))
        user = printed["users"][step["user"]]
        sts = boto3.client("sts", endpoint_url=endpoint, region_name="us-east-1",
                           aws_access_key_id=user["AccessKeyId"], aws_secret_access_key=user["SecretAccessKey"])
        credentials = sts.assume_role(RoleArn=role["Arn"], RoleSessionName="test")["Credentials"]
        printed["roles"][step["name"]] = {key: credentials[key] for key in ("AccessKeyId", "SecretAccessKey", "SessionToken")}
    elif op == "enable-auth":
        request = urllib.request.Request(endpoint + "/moto-api/reset-auth", data=b"0", method="POST",
                                         headers={"Content-Type": "text/plain"})
        urllib.request.urlopen(request, timeout=30).read()
    else:
        sys.exit("unknown step: %r" % (step,))

print(json.dumps(printed))
