#!/usr/bin/env python3
"""moto's S3 server (moto_server), whose signature check sees each request as it was sent.

moto checks a signature against the request URL as werkzeug rebuilds it: the path decoded
and quoted again, the query decoded (`uri_to_iri`). Its check then signs `delimiter=/` where
the client signed `delimiter=%2F`, or `a+b` where it signed `a%2Bb`, and refuses every signed
ListObjectsV2 with a delimiter and every key with such characters, boto3's own requests
included (getmoto/moto#5948). Here the check gets the request line as it arrived
(werkzeug's RAW_URI), which is what S3 checks; nothing else of moto changes.
Usage: moto-server.py -H 127.0.0.1 -p PORT
"""
import sys

from moto.core import authorization, responses

set_up = responses.BaseResponse.setup_class
check = authorization.ActionAuthenticatorMixin._authenticate_and_authorize_action


def set_up_keeping_the_request_line(self, request, full_url, headers, *args, **kwargs):
    set_up(self, request, full_url, headers, *args, **kwargs)
    environ = getattr(request, "environ", None) or {}
    self.request_line_uri = environ.get("RAW_URI") or environ.get("REQUEST_URI")


def check_as_sent(self, *args, **kwargs):
    sent = getattr(self, "request_line_uri", None)
    if not sent:
        return check(self, *args, **kwargs)
    rebuilt, self.uri = self.uri, "http://request-line" + sent
    try:
        return check(self, *args, **kwargs)
    finally:
        self.uri = rebuilt


responses.BaseResponse.setup_class = set_up_keeping_the_request_line
authorization.ActionAuthenticatorMixin._authenticate_and_authorize_action = check_as_sent

from moto.server import main  # noqa: E402  (after the patch)

sys.exit(main(sys.argv[1:]))
