"""The production stack on this machine: the static files collected with the production
storage, DEBUG off, gunicorn's sync workers running the compose file's own command, and
nginx in front with the site configuration filled from the template compose mounts
(``deploy/nginx/default.conf.template``).

Used by the production tests (tests/test_production_proxy.py,
tests/web/test_production_offline.py) and by ``benchmarks/bench_proxy.py``. Every wait is
on a state (a file written, a socket answering, a process gone) with a deadline.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import secrets
import shutil
import signal
import socket
import string
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import dj_database_url
import yaml

ROOT = Path(__file__).resolve().parent.parent
SITE_TEMPLATE = ROOT / "deploy" / "nginx" / "default.conf.template"
MAIN_CONFIG = ROOT / "deploy" / "nginx" / "nginx.conf"
COMPOSE = ROOT / "docker-compose.yml"
BIN = Path(sys.executable).parent
DEMO_PASSWORD = "stack-demo-pass-4821"
ADMIN_PASSWORD = "stack-admin-pass-4821"
_PLACEHOLDER = re.compile(r"\$\{(\w+)\}")


def nginx_binary() -> str | None:
    return shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if Path(p).exists()), None
    )


def template_names(text: str | None = None) -> set[str]:
    """The ``${NAME}`` placeholders of the site template."""
    return set(_PLACEHOLDER.findall(SITE_TEMPLATE.read_text() if text is None else text))


def render_site(values: Mapping[str, str]) -> str:
    """The site template filled as the official image's entrypoint fills it: envsubst over
    the names its NGINX_ENVSUBST_FILTER lets through (``^STUDY_``), so nginx's own
    ``$variables`` stay as they are."""
    text = SITE_TEMPLATE.read_text()
    missing = sorted(template_names(text) - set(values))
    if missing:
        raise KeyError(f"the site template needs {', '.join(missing)}")
    return string.Template(text).safe_substitute(values)


def main_config(site: str, prefix: Path) -> str:
    """deploy/nginx/nginx.conf (what compose mounts over the image's own) around the site,
    in a prefix of its own: its pid, logs and temporary files there, one worker process,
    no user to switch to (the image's ``nginx`` is not on this machine)."""
    temp_paths = "\n".join(
        f"    {name}_temp_path {prefix / name};"
        for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    text = MAIN_CONFIG.read_text()
    for pattern, replacement in (
        (r"^user .*;\n", ""),
        (r"^worker_processes .*;", "worker_processes 1;"),
        (r"^pid .*;", f"pid {prefix / 'nginx.pid'};"),
        (r"^error_log .*;", f"error_log {prefix / 'error.log'} warn;"),
        (r"^\s*include /etc/nginx/mime.types;\n", ""),
        (r"^\s*access_log .*;", f"    access_log off;\n{temp_paths}"),
    ):
        text, count = re.subn(pattern, replacement, text, flags=re.MULTILINE)
        assert count == 1, f"{MAIN_CONFIG.name} has no line {pattern!r}"
    include = "    include /etc/nginx/conf.d/*.conf;"
    assert include in text, f"{MAIN_CONFIG.name} does not include conf.d"
    return text.replace(include, site)


def gunicorn_command(bind: str) -> list[str]:
    """The compose file's web command, bound where this machine's stack listens."""
    command = yaml.safe_load(COMPOSE.read_text())["services"]["web"]["command"]
    assert command[0] == "gunicorn", command
    rest = [arg for arg in command[1:] if not arg.startswith("--bind")]
    return [str(BIN / "gunicorn"), *rest, f"--bind={bind}"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(condition, *, what: str, timeout: float = 60.0, interval: float = 0.05):
    """Poll ``condition`` until it returns something truthy; fail naming ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def request(
    port: int,
    method: str,
    path: str,
    *,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = 60.0,
) -> tuple[int, bytes, float]:
    """One request on a fresh connection: status, body and the seconds it took."""
    started = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request(method, path, body=body, headers=dict(headers or {}))
        response = connection.getresponse()
        return response.status, response.read(), time.perf_counter() - started
    finally:
        connection.close()


def _answers(port: int) -> bool:
    try:
        return request(port, "GET", "/healthz", timeout=2)[0] == 200
    except OSError:
        return False


@dataclass
class Stack:
    """A running stack: ``port`` is where clients go (nginx, or gunicorn without it)."""

    root: Path
    env: dict[str, str]
    port: int
    tokens: dict[str, str]
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    def log(self, name: str) -> str:
        path = self.root / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def review_once(self, timeout: float = 60.0) -> tuple[int, float]:
        """A learner's review through the API: the due page, then a pass for its first
        recall card. The status of the review and the seconds both requests took."""
        auth = {"Authorization": f"Token {self.tokens['demo']}"}
        status, body, due_seconds = request(
            self.port, "GET", "/api/v1/reviews/due/", headers=auth, timeout=timeout
        )
        assert status == 200, body[:500]
        due = json.loads(body)["results"]
        card = next(item["card"]["id"] for item in due if item["card"]["kind"] == "recall")
        status, body, seconds = request(
            self.port,
            "POST",
            "/api/v1/reviews/",
            body=json.dumps({"card": card, "result": "pass"}).encode(),
            headers={**auth, "Content-Type": "application/json"},
            timeout=timeout,
        )
        return status, due_seconds + seconds


def stack_environment(root: Path, database_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "STUDY_"))}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "studyapp.settings",
            "DJANGO_DEBUG": "0",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
            # No TLS on this machine: nginx is the edge and says plain HTTP.
            "DJANGO_SECURE_SSL_REDIRECT": "0",
            "DATABASE_URL": database_url,
            "STUDY_STATIC_ROOT": str(root / "static"),
            "STUDY_VAR_DIR": str(root / "var"),
            "STUDY_TRUSTED_PROXIES": "1",
            "DEMO_PASSWORD": DEMO_PASSWORD,
            "ADMIN_PASSWORD": ADMIN_PASSWORD,
            "WEB_CONCURRENCY": "2",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


def _manage(env: Mapping[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"manage.py {' '.join(args)}:\n{done.stderr[-3000:]}"
    return done.stdout


def prepare(env: Mapping[str, str]) -> dict[str, str]:
    """collectstatic with the production storage, migrate, the starter deck, the demo
    learner with cards due today and the admin; their API tokens by username."""
    _manage(env, "collectstatic", "--noinput", "-v0")
    assert (Path(env["STUDY_STATIC_ROOT"]) / "staticfiles.json").exists()
    _manage(env, "migrate", "--noinput", "-v0")
    _manage(env, "load_starter_content")
    out = _manage(env, "create_demo_users", "--due-today", "60")
    return dict(re.findall(r"^(demo|admin)\s+password \S+\s+token (\w+)", out, re.MULTILINE))


@contextlib.contextmanager
def database(root: Path) -> Iterator[str]:
    """A database of the stack's own: a fresh one on the PostgreSQL server of
    DATABASE_URL when it names one (dropped after), else an SQLite file under ``root``."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        yield f"sqlite:///{root / 'db.sqlite3'}"
        return
    import psycopg

    config = dj_database_url.parse(url)
    name = f"study_stack_{secrets.token_hex(4)}"
    server = {
        "host": config["HOST"] or "127.0.0.1",
        "port": config["PORT"] or 5432,
        "user": config["USER"],
        "password": config["PASSWORD"] or None,
        "dbname": "postgres",
        "autocommit": True,
    }
    with psycopg.connect(**server) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(**server) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _spawn(
    stack: Stack, name: str, command: list[str], *, pass_fds: tuple[int, ...] = ()
) -> subprocess.Popen:
    log = (stack.root / f"{name}.log").open("wb")
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env=stack.env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        pass_fds=pass_fds,
    )
    stack.processes[name] = process
    return process


def _running(stack: Stack, port: int) -> bool:
    for name, process in stack.processes.items():
        if process.poll() is not None:
            raise AssertionError(f"{name} exited with {process.returncode}:\n{stack.log(name)}")
    return _answers(port)


def _stop(processes: Mapping[str, subprocess.Popen]) -> None:
    """TERM to each process group, KILL what is left after 10 s."""
    for process in processes.values():
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
    for process in processes.values():
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def site_values(upstream: str, port: int, **overrides: str) -> dict[str, str]:
    """The template's values on this machine; compose sets the same names."""
    return {
        "STUDY_PROXY_LISTEN": f"127.0.0.1:{port}",
        "STUDY_PROXY_UPSTREAM": upstream,
        "STUDY_MAX_BODY_BYTES": os.environ.get("STUDY_MAX_BODY_BYTES", str(8 * 1024 * 1024)),
        "STUDY_PROXY_TRUST_FORWARDED": "off",
        "STUDY_PROXY_CONN_PER_CLIENT": "64",
        "STUDY_AUTH_MAX_BODY_BYTES": os.environ.get("STUDY_AUTH_MAX_BODY_BYTES", "4096"),
        "STUDY_PROXY_LOGINS_PER_MINUTE": "30",
        **overrides,
    }


@contextlib.contextmanager
def running_stack(*, proxy: bool = True, **site: str) -> Iterator[Stack]:
    """Prepare and start the stack; ``site`` overrides the template's values."""
    # A short path: a unix socket's name is at most 107 bytes.
    root = Path(tempfile.mkdtemp(prefix="study-stack-"))
    root.chmod(0o755)  # nginx's workers (nobody, when started as root) reach the socket
    try:
        with database(root) as url:
            env = stack_environment(root, url)
            stack = Stack(root=root, env=env, port=free_port(), tokens=prepare(env))
            try:
                yield _start(stack, proxy=proxy, site=site)
            finally:
                _stop(stack.processes)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _start(stack: Stack, *, proxy: bool, site: Mapping[str, str]) -> Stack:
    if not proxy:
        _spawn(stack, "gunicorn", gunicorn_command(f"127.0.0.1:{stack.port}"))
        wait_for(lambda: _running(stack, stack.port), what="gunicorn to answer /healthz")
        return stack
    _spawn(stack, "gunicorn", gunicorn_command(f"unix:{stack.root / 'gunicorn.sock'}"))
    add_proxy(stack, "nginx", stack.port, **site)
    return stack


def add_proxy(stack: Stack, name: str, port: int, **site: str) -> int:
    """Start an nginx called ``name`` on ``port`` in front of the stack's gunicorn, with
    the site template filled from ``site`` over this machine's values; once it answers."""
    nginx = nginx_binary()
    assert nginx, "nginx is not installed"
    prefix = stack.root / name
    prefix.mkdir()
    values = site_values(f"unix:{stack.root / 'gunicorn.sock'}", port, **site)
    conf = prefix / "nginx.conf"
    conf.write_text(main_config(render_site(values), prefix))
    command = [nginx, "-p", str(prefix), "-e", str(prefix / "error.log"), "-c", str(conf)]
    _spawn(stack, name, [*command, "-g", "daemon off;"])
    wait_for(lambda: _running(stack, port), what=f"{name} and gunicorn to answer /healthz")
    return port


class Trickle:
    """``count`` connections, each sending a request whose body is shorter than its
    Content-Length, one byte a second, until stopped."""

    def __init__(self, port: int, count: int, *, sources: int = 10, path: str = "/api/v1/reviews/"):
        # Spread over ``sources`` loopback addresses (127.0.0.2 and on), as many clients
        # would be, each under nginx's connections per client.
        self.port, self.count, self.sources, self.path = port, count, sources, path
        self.sockets: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._feed, daemon=True)
        self.sent_rounds = 0

    def __enter__(self) -> Trickle:
        head = (
            f"POST {self.path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
            "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"
        ).encode()
        for n in range(self.count):
            source = (f"127.0.0.{2 + n % self.sources}", 0)
            connection = socket.create_connection(
                ("127.0.0.1", self.port), timeout=10, source_address=source
            )
            connection.sendall(head)
            self.sockets.append(connection)
        self._thread.start()
        return self

    def _feed(self) -> None:
        # One byte a second on every connection: the pace of the attack, not a wait.
        while not self._stop.wait(1.0):
            for connection in self.sockets:
                with contextlib.suppress(OSError):
                    connection.send(b" ")
            self.sent_rounds += 1

    def still_held(self) -> int:
        """Connections the server neither answered nor closed."""
        held = 0
        for connection in self.sockets:
            connection.setblocking(False)
            try:
                connection.recv(1, socket.MSG_PEEK)  # an answer, or b"" once closed
            except BlockingIOError:
                held += 1  # nothing to read: still waiting for the rest of its body
            except OSError:
                pass  # reset
            finally:
                connection.setblocking(True)
        return held

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        for connection in self.sockets:
            connection.close()
