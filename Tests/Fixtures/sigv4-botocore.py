#!/usr/bin/env python3
"""Signs a table of S3 requests with botocore's S3SigV4Auth, the signer of the AWS CLI and boto3.

Reads a JSON array on stdin, one object per request:
  {"method": "GET", "url": "https://bucket.s3.amazonaws.com/a%20b", "headers": {"Range": "bytes=0-9"},
   "region": "us-east-1", "accessKeyID": "...", "secretAccessKey": "...", "sessionToken": null,
   "date": "2013-05-24T00:00:00Z"}
Prints a JSON array on stdout, one object per request, in the same order: the headers botocore
adds ("authorization", "x-amz-date", "x-amz-content-sha256", "x-amz-security-token" when there is
a token) and, to show where two signers part, botocore's canonical request and string to sign.

botocore's S3 signer signs the path and query exactly as they stand in the URL it is given, and
its serializer has encoded them before: an object key with botocore.utils.percent_encode
(safe='/~'), the query with percent_encode_sequence. So each URL is first brought to the form
botocore itself would send: its path and query decoded (percent escapes only; '+' is a plus) and
encoded again with those two functions.
"""
import datetime
import json
import sys
from unittest import mock
from urllib.parse import unquote, urlsplit, urlunsplit

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.utils import percent_encode, percent_encode_sequence


class RecordingS3SigV4Auth(S3SigV4Auth):
    """S3SigV4Auth that keeps what it signed."""

    def string_to_sign(self, request, canonical_request):
        self.canonical = canonical_request
        self.signed = super().string_to_sign(request, canonical_request)
        return self.signed


def as_botocore_sends(url):
    parts = urlsplit(url)
    path = percent_encode(unquote(parts.path), safe='/~')
    pairs = []
    if parts.query:
        for parameter in parts.query.split('&'):
            if parameter:
                name, _, value = parameter.partition('=')
                pairs.append((unquote(name), unquote(value)))
    query = percent_encode_sequence(pairs) if pairs else ''
    return urlunsplit((parts.scheme, parts.netloc, path, query, ''))


def sign(row):
    credentials = Credentials(row['accessKeyID'], row['secretAccessKey'], row.get('sessionToken'))
    auth = RecordingS3SigV4Auth(credentials, 's3', row['region'])
    request = AWSRequest(method=row['method'], url=as_botocore_sends(row['url']),
                         headers=dict(row.get('headers') or {}))
    when = datetime.datetime.strptime(row['date'], '%Y-%m-%dT%H:%M:%SZ').replace(tzinfo=datetime.timezone.utc)
    # As botocore's own tests do: the signer reads the clock through this function.
    with mock.patch('botocore.auth.get_current_datetime', return_value=when):
        auth.add_auth(request)
    headers = {name.lower(): value for name, value in request.headers.items()
               if name.lower() in ('authorization', 'x-amz-date', 'x-amz-content-sha256', 'x-amz-security-token')}
    return {'headers': headers, 'canonicalRequest': auth.canonical, 'stringToSign': auth.signed,
            'sentURL': request.url}


def main():
    rows = json.load(sys.stdin)
    json.dump([sign(row) for row in rows], sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write('\n')


if __name__ == '__main__':
    main()
