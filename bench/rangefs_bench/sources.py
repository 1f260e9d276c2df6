"""The servers of the webdav, subsonic and sftp groups, started the first time a row asks for them
and stopped with the run's other servers: Apache's mod_dav, Supysonic on waitress, OpenSSH's sshd
(its sftp-server, with keys made for the run), an nginx TLS and HTTP/2 front for the first two's
https twins, and a latency proxy in front of each."""
import base64
import hashlib
import json
import os
import pwd
import re
import shutil
import subprocess
import urllib.parse
import urllib.request

from .config import (
    SFTP_PORT, SFTP_PROXY_PORT, SFTP_SERVER, SONIC_ROOT, SUBSONIC_PASSWORD, SUBSONIC_PORT, SUBSONIC_PROXY_PORT,
    SUBSONIC_USER, WEBDAV_PORT, WEBDAV_PROXY_PORT, WWW
)
from .process import BenchError, run
from .servers import LogMark, port_open, start_proxy, tls_settings, wait_port, write_server_pids
from .tls import check_http2, scheme, twin_port


def start(ctx, what, tls):
    """The base URL (scheme://127.0.0.1:port, the latency proxy's; sftp://USER@127.0.0.1:port for
    "sftp") of the `what` server ("webdav", "subsonic" or "sftp") or of its https twin, starting
    what it needs the first time."""
    key = (what, tls)
    if key in ctx.sources:
        return ctx.sources[key]
    if tls and what == "sftp":
        raise BenchError("SFTP has no https twin")
    port, proxy_port = {"webdav": (WEBDAV_PORT, WEBDAV_PROXY_PORT),
                        "subsonic": (SUBSONIC_PORT, SUBSONIC_PROXY_PORT),
                        "sftp": (SFTP_PORT, SFTP_PROXY_PORT)}[what]
    if (what, "server") not in ctx.sources:
        if port_open(port):
            raise BenchError(f"something already listens on 127.0.0.1:{port}")
        {"webdav": start_apache, "subsonic": start_supysonic, "sftp": start_sshd}[what](ctx, port)
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
    if what == "sftp":
        ctx.sources[key] = f"sftp://{ctx.ssh.user}@127.0.0.1:{listen}"
    else:
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


class SshKeys:
    """The sftp group's keys, made for the run in `directory`: the server's host key, the key every
    client signs in with (the server's authorized_keys) and a known_hosts file that names the host
    key at the latency proxy's address, against which every client checks the server."""

    def __init__(self, directory):
        self.directory = directory
        self.host_key, self.identity = directory / "host_ed25519", directory / "id_ed25519"
        self.authorized_keys, self.known_hosts = directory / "authorized_keys", directory / "known_hosts"
        self.user = pwd.getpwuid(os.getuid()).pw_name

    def make(self):
        self.directory.mkdir(parents=True, exist_ok=True)
        for key in (self.host_key, self.identity):
            for path in (key, public(key)):
                path.unlink(missing_ok=True)
            run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "rangefs-bench", "-f", str(key)], 60)
        shutil.copyfile(public(self.identity), self.authorized_keys)
        kind, blob = public(self.host_key).read_text().split()[:2]
        self.known_hosts.write_text(f"[127.0.0.1]:{SFTP_PROXY_PORT} {kind} {blob}\n")

    def curl_options(self):
        """How curl signs in and checks the host key (it takes no known_hosts file but ~/.ssh's)."""
        blob = public(self.host_key).read_text().split()[1]
        fingerprint = base64.b64encode(hashlib.sha256(base64.b64decode(blob)).digest()).decode()
        return ["--key", str(self.identity), "--pubkey", str(public(self.identity)), "--hostpubsha256", fingerprint]


def public(key):
    return key.with_name(key.name + ".pub")


def start_sshd(ctx, port):
    """OpenSSH's sshd from a configuration of its own, signing in by the run's key alone; its
    sftp-server logs each file handle's bytes read to sftp-server.log (SftpLogMark)."""
    d = ctx.work / "sftp"
    ctx.ssh = SshKeys(d)
    ctx.ssh.make()
    try:
        os.makedirs("/run/sshd", exist_ok=True)     # sshd's privilege separation directory
    except OSError as error:
        raise BenchError(f"cannot make /run/sshd: {error}")
    (d / "sshd_config").write_text(f"""Port {port}
ListenAddress 127.0.0.1
HostKey {ctx.ssh.host_key}
AuthorizedKeysFile {ctx.ssh.authorized_keys}
AuthenticationMethods publickey
StrictModes no
Subsystem sftp {SFTP_SERVER} -e -l INFO 2>>{d}/sftp-server.log
PidFile {d}/sshd.pid
""")
    ctx.logs["sftp"] = d / "sftp-server.log"
    spawn(ctx, ["/usr/sbin/sshd", "-D", "-e", "-f", str(d / "sshd_config")], port, "sshd")


class SftpLogMark(LogMark):
    """What sshd's sftp-server read for its clients after this mark: at log level INFO it logs each
    file handle it closes (at the latest when the session ends) with the bytes read through it."""
    CLOSE = re.compile(r'close "(?P<path>[^"]*)" bytes read (?P<read>\d+)')

    def entries(self):
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            text = f.read().decode(errors="replace")
        for match in self.CLOSE.finditer(text):
            yield match["path"], int(match["read"])


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
