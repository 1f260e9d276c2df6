"""The https twins: the names of their links (plain-tls is plain's twin), their ports, the run's
throwaway certificate authority and the leaf certificate its servers present for 127.0.0.1, and
the options by which each client trusts that CA (and nothing else of the system changes)."""
import ssl

from .config import TLS_PORT_OFFSET, TLS_SUFFIX
from .process import BenchError, run


def is_tls(link):
    return link.endswith(TLS_SUFFIX)


def base_link(link):
    """The plain link an https link is the twin of ("slow-tls" -> "slow"); a plain link itself."""
    return link[:-len(TLS_SUFFIX)] if is_tls(link) else link


def twin_link(base, tls):
    """`base`'s https twin when `tls`, else `base`."""
    return base + TLS_SUFFIX if tls else base


def twin_port(port, tls):
    """Where `port`'s https twin listens when `tls`, else `port`."""
    return port + TLS_PORT_OFFSET if tls else port


def scheme(tls):
    return "https" if tls else "http"


class Certificates:
    """A CA made for this run alone and a leaf certificate it signed for IP 127.0.0.1, in `directory`.
    Servers present `cert` with `key`; clients trust `ca` (curl --cacert, rangefs --ca-file...)."""

    def __init__(self, directory):
        self.directory = directory
        self.ca, self.ca_key = directory / "ca.pem", directory / "ca.key"
        self.cert, self.key = directory / "server.pem", directory / "server.key"

    def make(self):
        """Once per run: a fresh CA (a day's validity; its key never leaves the work directory)."""
        d = self.directory
        d.mkdir(parents=True, exist_ok=True)
        request, extensions = d / "server.csr", d / "server.ext"
        extensions.write_text("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                              "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1\n")
        openssl = ["openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        run(openssl + ["-x509", "-days", "1", "-subj", "/CN=RangeFS bench CA", "-keyout", str(self.ca_key),
                       "-out", str(self.ca), "-addext", "basicConstraints=critical,CA:TRUE",
                       "-addext", "keyUsage=critical,keyCertSign,cRLSign"], 60)
        run(openssl + ["-subj", "/CN=127.0.0.1", "-keyout", str(self.key), "-out", str(request)], 60)
        run(["openssl", "x509", "-req", "-in", str(request), "-CA", str(self.ca), "-CAkey", str(self.ca_key),
             "-CAcreateserial", "-days", "1", "-extfile", str(extensions), "-out", str(self.cert)], 60)
        run(["openssl", "verify", "-CAfile", str(self.ca), str(self.cert)], 60)
        return self

    def context(self):
        """An ssl context for Python's own clients that trusts this CA only."""
        return ssl.create_default_context(cafile=str(self.ca))


def check_http2(ctx, url):
    """Raises unless `url` answers over TLS (verified against the run's CA) with HTTP/2, whatever
    its status."""
    result = run(["curl", "-sS", "--cacert", str(ctx.tls.ca), "-o", "/dev/null", "-w", "%{http_version}",
                  url], 30, check=False)
    if result.returncode != 0 or result.stdout.strip() != "2":
        raise BenchError(f"{url} did not answer over TLS with HTTP/2 (curl exited {result.returncode}, "
                         f"HTTP version {result.stdout.strip() or '?'}): {result.stderr.strip()[-200:]}")
