"""The WebDAV and Subsonic servers of the webdav and subsonic groups, started the first time a row
asks for them and stopped with the run's other servers: Apache's mod_dav, Supysonic on waitress,
an nginx TLS and HTTP/2 front for their https twins, and a latency proxy in front of each."""
import json
import os
import shutil
import subprocess
import urllib.parse
import urllib.request

from .config import (
    SONIC_ROOT, SUBSONIC_PASSWORD, SUBSONIC_PORT, SUBSONIC_PROXY_PORT, SUBSONIC_USER, WEBDAV_PORT,
    WEBDAV_PROXY_PORT, WWW
)
from .process import BenchError, run
from .servers import port_open, start_proxy, tls_settings, wait_port, write_server_pids
from .tls import check_http2, scheme, twin_port


def start(ctx, what, tls):
    """The base URL (scheme://127.0.0.1:port, the latency proxy's) of the `what` server ("webdav"
    or "subsonic") or of its https twin, starting what it needs the first time."""
    key = (what, tls)
    if key in ctx.sources:
        return ctx.sources[key]
    port, proxy_port = {"webdav": (WEBDAV_PORT, WEBDAV_PROXY_PORT),
                        "subsonic": (SUBSONIC_PORT, SUBSONIC_PROXY_PORT)}[what]
    if (what, "server") not in ctx.sources:
        if port_open(port):
            raise BenchError(f"something already listens on 127.0.0.1:{port}")
        (start_apache if what == "webdav" else start_supysonic)(ctx, port)
        ctx.sources[(what, "server")] = port
    if tls:
        start_tls_front(ctx)
    front, listen = twin_port(port, tls), twin_port(proxy_port, tls)
    if port_open(listen):
        raise BenchError(f"something already listens on 127.0.0.1:{listen}")
    proxy = start_proxy(listen, front, ctx.args.rtt_ms, ctx.args.rate)
    ctx.servers.append(proxy)
    write_server_pids(ctx)
    wait_port(listen, proxy, "latency proxy")
    ctx.sources[key] = f"{scheme(tls)}://127.0.0.1:{listen}"
    if tls:
        check_http2(ctx, ctx.sources[key] + "/")
    return ctx.sources[key]


def spawn(ctx, cmd, port, what, cwd=None, timeout=60):
    log_file = open(ctx.work / f"{what}.log", "ab")
    proc = subprocess.Popen(cmd, cwd=cwd, start_new_session=True, stdin=subprocess.DEVNULL,
                            stdout=log_file, stderr=subprocess.STDOUT)
    log_file.close()
    ctx.servers.append(proc)
    write_server_pids(ctx)
    wait_port(port, proc, what, timeout)
    return proc


def start_apache(ctx, port):
    """Apache with the modules WebDAV needs, serving bench/data/www under /dav/ (the path a WebDAV
    share usually has), keep-alive without a request limit as the bench's nginx."""
    d = ctx.work / "webdav"
    shutil.rmtree(d, ignore_errors=True)
    (d / "locks").mkdir(parents=True)
    os.chmod(d / "locks", 0o777)
    modules = ["mpm_event", "authz_core", "alias", "mime", "dav", "dav_fs"]
    loads = "\n".join(f"LoadModule {m}_module /usr/lib/apache2/modules/mod_{m}.so" for m in modules)
    # Apache refuses to serve as root; its children then run as nobody, who can read the tree.
    user = "User nobody\nGroup nogroup" if os.getuid() == 0 else ""
    (d / "httpd.conf").write_text(f"""ServerRoot {d}
Listen 127.0.0.1:{port}
PidFile {d}/httpd.pid
DefaultRuntimeDir {d}
ErrorLog {d}/error.log
LogFormat "%m\t%U\t%>s\t%B" requests
CustomLog {d}/access.log requests
{loads}
TypesConfig /etc/mime.types
{user}
ServerName 127.0.0.1
KeepAlive On
MaxKeepAliveRequests 0
KeepAliveTimeout 120
DavLockDB {d}/locks/davlock
DocumentRoot {WWW}
Alias /dav/ {WWW}/
<Directory {WWW}>
  Require all granted
</Directory>
<Location /dav/>
  Dav On
</Location>
""")
    ctx.logs["webdav"] = d / "access.log"    # LogMark's fields: method, path, status, body bytes
    spawn(ctx, ["/usr/sbin/apache2", "-f", str(d / "httpd.conf"), "-DFOREGROUND"], port, "apache")


def subsonic_cli(d, args):
    """supysonic-cli in the server's directory: Supysonic reads ./supysonic.conf."""
    run(["env", "-C", str(d), "supysonic-cli"] + args, 600)


def start_supysonic(ctx, port):
    """Supysonic on waitress with a fresh database: one user, the library folder, scanned once."""
    if not shutil.which("supysonic-server") or not shutil.which("supysonic-cli"):
        raise BenchError("supysonic is not installed (scripts/install-deps.sh installs it)")
    d = ctx.work / "subsonic"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    (d / "supysonic.conf").write_text(f"""[base]
database_uri = sqlite:///{d}/supysonic.sqlite
scanner_extensions = mp3 flac
[webapp]
cache_dir = {d}/cache
log_file = {d}/server.log
[daemon]
socket = {d}/daemon.sock
""")
    subsonic_cli(d, ["user", "add", SUBSONIC_USER, "-p", SUBSONIC_PASSWORD])
    subsonic_cli(d, ["folder", "add", "Music", str(SONIC_ROOT)])
    subsonic_cli(d, ["folder", "scan", "Music"])
    (d / "password").write_text(SUBSONIC_PASSWORD + "\n")
    os.chmod(d / "password", 0o600)
    spawn(ctx, ["env", "PYTHONUNBUFFERED=1", "supysonic-server", "-S", "waitress", "-h", "127.0.0.1",
                "-p", str(port)], port, "supysonic", cwd=d)


def start_tls_front(ctx):
    """One nginx with TLS and HTTP/2 (the run's CA) in front of Apache and of Supysonic, as the
    https twins of the other links: each listens TLS_PORT_OFFSET above its server."""
    if ctx.tls_front is not None:
        return
    d = ctx.work / "tls-front"
    (d / "tmp").mkdir(parents=True, exist_ok=True)
    user = "user root;" if os.getuid() == 0 else ""
    servers = "".join(f"""
    server {{
        listen 127.0.0.1:{twin_port(port, True)} ssl http2;
        location / {{
            proxy_pass http://127.0.0.1:{port};
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_buffering off;
            proxy_request_buffering off;
        }}
    }}""" for port in (WEBDAV_PORT, SUBSONIC_PORT))
    (d / "nginx.conf").write_text(f"""daemon off;
worker_processes 1;
{user}
pid {d}/nginx.pid;
error_log {d}/error.log;
events {{ worker_connections 1024; }}
http {{
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    access_log off;
    {tls_settings(ctx)}
    client_body_temp_path {d}/tmp/body;
    proxy_temp_path {d}/tmp/proxy;
    fastcgi_temp_path {d}/tmp/fastcgi;
    uwsgi_temp_path {d}/tmp/uwsgi;
    scgi_temp_path {d}/tmp/scgi;
{servers}
}}
""")
    for port in (WEBDAV_PORT, SUBSONIC_PORT):
        if port_open(twin_port(port, True)):
            raise BenchError(f"something already listens on 127.0.0.1:{twin_port(port, True)}")
    proc = subprocess.Popen(["/usr/sbin/nginx", "-c", str(d / "nginx.conf"), "-p", str(d) + "/", "-e",
                             str(d / "error.log")], start_new_session=True, stdin=subprocess.DEVNULL)
    ctx.servers.append(proc)
    write_server_pids(ctx)
    for port in (WEBDAV_PORT, SUBSONIC_PORT):
        wait_port(twin_port(port, True), proc, "nginx TLS front")
    ctx.tls_front = proc


def subsonic_api(ctx, base, method, **params):
    """One Subsonic API call through `base` (a proxy's URL), its JSON reply's subsonic-response."""
    query = urllib.parse.urlencode({"u": SUBSONIC_USER, "p": SUBSONIC_PASSWORD, "v": "1.12.0", "c": "bench",
                                    "f": "json", **params})
    context = ctx.tls.context() if base.startswith("https") else None
    try:
        with urllib.request.urlopen(f"{base}/rest/{method}.view?{query}", timeout=60, context=context) as reply:
            answer = json.loads(reply.read())["subsonic-response"]
    except (OSError, ValueError, KeyError) as error:
        raise BenchError(f"Subsonic {method}: {error}")
    if answer.get("status") != "ok":
        raise BenchError(f"Subsonic {method}: {answer.get('error')}")
    return answer


def download_url(base, song_id):
    query = urllib.parse.urlencode({"u": SUBSONIC_USER, "p": SUBSONIC_PASSWORD, "v": "1.12.0", "c": "bench",
                                    "id": song_id})
    return f"{base}/rest/download.view?{query}"
