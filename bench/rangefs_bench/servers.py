"""The HTTP servers on loopback: nginx with its plain, slow and stream ports and their latency
proxies, each with an https twin (TLS and HTTP/2, TLS_PORT_OFFSET above it), the mirrors' nginx,
the list of server pids run.sh stops, and LogMark, which counts what a server sent from its log."""
import os
import subprocess
import sys
import time

from .config import (
    BENCH, MIRROR_NGINX_OFFSET, MIRROR_PORTS, PLAIN_PORT, PROXY_PORT, SLOW_PORT, STREAM_PORT, STREAM_PROXY_PORT, WWW
)
from .process import BenchError, stop_server
from .tls import check_http2, scheme, twin_link, twin_port


def port_open(port):
    import socket
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def wait_port(port, proc, what, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if port_open(port):
            return
        if proc.poll() is not None:
            raise BenchError(f"{what} exited with {proc.returncode}")
        time.sleep(0.05)
    raise BenchError(f"{what} did not listen on {port}")


# Each access log line: method, path, status, body bytes sent, Range, the protocol (HTTP/1.1,
# HTTP/2.0), the connection's serial number (requests an HTTP/2 client multiplexed share one) and
# the time the request was logged (seconds since the epoch, to the millisecond).
LOG_FORMAT = ("log_format bench "
              "'$request_method\\t$uri\\t$status\\t$body_bytes_sent\\t$http_range\\t$server_protocol\\t$connection\\t$msec';")


def tls_settings(ctx):
    """nginx's http-level TLS settings, which its `listen ... ssl http2` servers use: the run's
    leaf certificate, TLS 1.3 beside 1.2 (Debian 12's nginx offers 1.0-1.2 alone unless told, a
    round trip more per connection than today's servers) and a session cache, as a web server on
    the internet would keep."""
    return (f"ssl_certificate {ctx.tls.cert};\n    ssl_certificate_key {ctx.tls.key};\n"
            "    ssl_protocols TLSv1.2 TLSv1.3;\n"
            "    ssl_session_cache shared:bench:1m;")


def listen(port, tls):
    return f"listen 127.0.0.1:{port}" + (" ssl http2;" if tls else ";")


def start_servers(ctx):
    """nginx on the plain, slow and stream ports and their https twins, and the latency proxies in
    front of the slow and stream ports and of their twins (TCP proxies: TLS passes through them)."""
    ports = [twin_port(port, tls) for port in (PLAIN_PORT, SLOW_PORT, PROXY_PORT, STREAM_PORT, STREAM_PROXY_PORT)
             for tls in (False, True)]
    for port in ports:
        if port_open(port):
            raise BenchError(f"something already listens on 127.0.0.1:{port}")
    ngx = ctx.work / "nginx"
    (ngx / "tmp").mkdir(parents=True, exist_ok=True)
    user = "user root;" if os.getuid() == 0 else ""
    server = """
    server {{
        {listen}
        root {root};
        autoindex on;
        access_log {log} bench;
    }}"""
    servers = "".join(server.format(listen=listen(twin_port(port, tls), tls), root=WWW,
                                    log=ctx.logs[twin_link(link, tls)])
                      for link, port in (("plain", PLAIN_PORT), ("slow", SLOW_PORT), ("stream", STREAM_PORT))
                      for tls in (False, True))
    conf = f"""daemon off;
worker_processes 1;
{user}
pid {ngx}/nginx.pid;
error_log {ngx}/error.log;
events {{ worker_connections 1024; }}
http {{
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    {LOG_FORMAT}
    {tls_settings(ctx)}
    client_body_temp_path {ngx}/tmp/body;
    proxy_temp_path {ngx}/tmp/proxy;
    fastcgi_temp_path {ngx}/tmp/fastcgi;
    uwsgi_temp_path {ngx}/tmp/uwsgi;
    scgi_temp_path {ngx}/tmp/scgi;
{servers}
}}
"""
    (ngx / "nginx.conf").write_text(conf)
    nginx = subprocess.Popen(["/usr/sbin/nginx", "-c", str(ngx / "nginx.conf"), "-p", str(ngx) + "/",
                              "-e", str(ngx / "error.log")], start_new_session=True,
                             stdin=subprocess.DEVNULL)
    ctx.servers.append(nginx)
    ctx.nginx = nginx
    for port in (PLAIN_PORT, SLOW_PORT, STREAM_PORT):
        for tls in (False, True):
            wait_port(twin_port(port, tls), nginx, "nginx")
    # The proxies limit each connection (nginx's limit_rate would let every request's first
    # second through at once, which short requests on one connection turn into far more).
    for proxy_port, upstream, rate in ((PROXY_PORT, SLOW_PORT, ctx.args.rate),
                                       (STREAM_PROXY_PORT, STREAM_PORT, ctx.args.stream_rate)):
        for tls in (False, True):
            proxy = start_proxy(twin_port(proxy_port, tls), twin_port(upstream, tls), ctx.args.rtt_ms, rate)
            ctx.servers.append(proxy)
            wait_port(twin_port(proxy_port, tls), proxy, "latency proxy")
    write_server_pids(ctx)
    for link in ("plain", "slow", "stream"):
        check_http2(ctx, ctx.links[twin_link(link, True)] + "/")


def start_proxy(port, upstream, rtt_ms, rate):
    """bench/latency_proxy.py on `port` in front of `upstream`: `rtt_ms` of round trip added,
    each connection's replies paced at `rate` (nginx units)."""
    return subprocess.Popen([sys.executable, str(BENCH / "latency_proxy.py"),
                             "--listen", f"127.0.0.1:{port}", "--upstream", f"127.0.0.1:{upstream}",
                             "--rtt-ms", str(rtt_ms), "--rate", str(rate_bytes(rate))],
                            start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)


def rate_bytes(text):
    """Bytes per second of a rate written as nginx writes it: 96k, 2m, 500000."""
    units = {"k": 1024, "m": 1024 * 1024}
    text = str(text).strip().lower()
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def rate_text(text):
    """A rate written as nginx writes it, for people: 2m -> 2 MiB/s, 96k -> 96 KiB/s."""
    text = str(text).strip().lower()
    names = {"k": "KiB/s", "m": "MiB/s"}
    return f"{text[:-1]} {names[text[-1]]}" if text and text[-1] in names else f"{text} B/s"


class LogMark:
    """Bytes a server sent for one URI path after this mark (read amplification), from its log
    (ctx.logs[link]: nginx's access log of a link; "webdav": Apache's; "sftp": sshd's)."""

    def __init__(self, ctx, link):
        self.path = ctx.logs[link]
        self.offset = self.path.stat().st_size if self.path.exists() else 0

    def requests(self):
        """Requests nginx logged after this mark."""
        time.sleep(0.5)   # nginx logs a request when it ends
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            return len(f.read().splitlines())

    def entries(self):
        """(URI path, body bytes sent) of each request logged after this mark (nginx's LOG_FORMAT;
        Apache's of the webdav group starts with the same four fields)."""
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            for line in f.read().decode(errors="replace").splitlines():
                parts = line.split("\t")
                if len(parts) >= 4:
                    yield parts[1], int(parts[3])

    def bytes_sent(self, uri_path):
        time.sleep(0.5)   # nginx logs a request when it ends; connections have just closed
        return sum(sent for path, sent in self.entries() if path == "/" + uri_path)

    @staticmethod
    def settle(ctx, link, quiet=1.0, timeout=20):
        """Waits until the link's log has not grown for `quiet` seconds: a request that a client
        dropped is logged only when nginx next tries to send on it."""
        path = ctx.logs[link]
        deadline = time.monotonic() + timeout
        size, since = -1, time.monotonic()
        while time.monotonic() < deadline:
            now = path.stat().st_size if path.exists() else 0
            if now != size:
                size, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet:
                return
            time.sleep(0.1)

    def traffic(self, ctx, link, prefix):
        """Bytes nginx sent for the URI paths under `prefix` after this mark, and the number of
        those requests, once the log has settled."""
        LogMark.settle(ctx, link)
        sent = [size for path, size in self.entries() if path.startswith("/" + prefix)]
        return sum(sent), len(sent)


class MirrorServer:
    """One mirror: its own nginx behind its own pacing proxy (which limits each connection, as
    the slow link's does: nginx's limit_rate would let each request's first second through at
    once), so that it can be stopped alone (a mirror that goes away mid-read) and its access
    log counts what it served. Clients connect to the proxy on MIRROR_PORTS[index]; nginx
    listens MIRROR_NGINX_OFFSET above it. With `tls` it is that mirror's https twin (TLS and
    HTTP/2, TLS_PORT_OFFSET above)."""

    def __init__(self, ctx, index, root, tls=False):
        self.ctx, self.index, self.tls = ctx, index, tls
        self.port = twin_port(MIRROR_PORTS[index], tls)
        self.nginx_port = self.port + MIRROR_NGINX_OFFSET
        self.dir = ctx.work / "mirrors" / twin_link(f"m{index + 1}", tls)
        self.log = self.dir / "access.log"
        self.proc = None
        self.proxy = None
        (self.dir / "tmp").mkdir(parents=True, exist_ok=True)
        user = "user root;" if os.getuid() == 0 else ""
        (self.dir / "nginx.conf").write_text(f"""daemon off;
worker_processes 1;
{user}
pid {self.dir}/nginx.pid;
error_log {self.dir}/error.log;
events {{ worker_connections 1024; }}
http {{
    default_type application/octet-stream;
    sendfile on;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    {LOG_FORMAT}
    {tls_settings(ctx) if tls else ""}
    client_body_temp_path {self.dir}/tmp/body;
    proxy_temp_path {self.dir}/tmp/proxy;
    fastcgi_temp_path {self.dir}/tmp/fastcgi;
    uwsgi_temp_path {self.dir}/tmp/uwsgi;
    scgi_temp_path {self.dir}/tmp/scgi;
    server {{
        {listen(self.nginx_port, tls)}
        root {root};
        access_log {self.log} bench;
    }}
}}
""")

    @property
    def name(self):
        return f"mirror {self.index + 1}"

    def url(self, rel):
        return f"{scheme(self.tls)}://127.0.0.1:{self.port}/{rel}"

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def start(self):
        for port in (self.port, self.nginx_port):
            if port_open(port):
                raise BenchError(f"something already listens on 127.0.0.1:{port}")
        self.proc = subprocess.Popen(["/usr/sbin/nginx", "-c", str(self.dir / "nginx.conf"), "-p", str(self.dir) + "/",
                                      "-e", str(self.dir / "error.log")], start_new_session=True,
                                     stdin=subprocess.DEVNULL)
        self.ctx.servers.append(self.proc)
        write_server_pids(self.ctx)
        wait_port(self.nginx_port, self.proc, f"nginx of {self.name}")
        self.proxy = start_proxy(self.port, self.nginx_port, 0, self.ctx.args.mirror_rate)
        self.ctx.servers.append(self.proxy)
        write_server_pids(self.ctx)
        wait_port(self.port, self.proxy, f"proxy of {self.name}")
        if self.tls:
            check_http2(self.ctx, self.url(""))

    def stop(self):
        """The proxy goes first (its open connections close, new ones are refused), then nginx
        (SIGTERM is its fast shutdown)."""
        for proc in (self.proxy, self.proc):
            if proc is None:
                continue
            stop_server(proc)
            if proc in self.ctx.servers:
                self.ctx.servers.remove(proc)
        write_server_pids(self.ctx)

    def established(self):
        """Client connections this mirror holds now (server side of /proc/net/tcp, ESTABLISHED)."""
        port = f":{self.port:04X}"
        with open("/proc/net/tcp") as f:
            return sum(1 for line in f.readlines()[1:]
                       if line.split()[1].endswith(port) and line.split()[3] == "01")


def write_server_pids(ctx):
    """run.sh stops what this file lists if bench.py itself is killed."""
    (ctx.work / "servers.pid").write_text("".join(f"{p.pid}\n" for p in ctx.servers))
