"""The embedded broker on a full disk (``studyapp.broker_fs``).

A publish that fails leaves nothing in the queue folder; a message that cannot be read
is set aside in ``unreadable/`` and the next one served; ``/readyz`` names a full disk.
The disk is a real one: a 1 MB tmpfs where mounting is allowed (root), filled until the
kernel answers ENOSPC; elsewhere a file-size limit (RLIMIT_FSIZE) makes the write fail
the same way. A real worker meets the files an earlier full disk left and serves on.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from kombu import Connection
from kombu.exceptions import ChannelError

from studyapp import broker_fs
from studyapp.celery import app

REPO = Path(__file__).resolve().parents[2]
REQUIRE_SERVICES = os.environ.get("REQUIRE_SERVICES") == "1"
# kombu keeps the bindings it made in a process-wide state: each test binds a queue of its
# own name, so none relies on a binding another test made in another folder.
QUEUE = "embedded"


@pytest.fixture(autouse=True)
def _queue_of_its_own(monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "QUEUE", f"q{uuid.uuid4().hex[:10]}")


def folders(root: Path) -> dict[str, str]:
    options = {
        "data_folder_in": str(root / "queue"),
        "data_folder_out": str(root / "queue"),
        "processed_folder": str(root / "processed"),
        "control_folder": str(root / "control"),
        "store_processed": False,
    }
    for key in ("data_folder_in", "processed_folder", "control_folder"):
        Path(options[key]).mkdir(parents=True, exist_ok=True)
    return options


def connection(options: dict[str, str]) -> Connection:
    return Connection("studyfs://", transport_options=options)


def queued(options: dict[str, str]) -> list[str]:
    return sorted(os.listdir(options["data_folder_in"]))


def take(queue) -> object:
    """The next message's payload, acknowledged."""
    message = queue.get(timeout=5)
    message.ack()
    return message.payload


def message_name(queue: str | None = None, *, ms: int = 0) -> str:
    # Zero-padded: before any message published since boot (the names sort as text).
    return f"{ms:04d}_{uuid.uuid4()}.{queue or QUEUE}.msg"


@pytest.fixture
def broker(tmp_path):
    return folders(tmp_path / "broker")


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MB tmpfs, unmounted afterwards; skipped where mounting is not allowed."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        reason = f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}"
        if REQUIRE_SERVICES:
            pytest.fail(f"REQUIRE_SERVICES=1 but {reason}")
        pytest.skip(reason)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path) -> Path:
    """Write a file until the disk is full (the kernel says ENOSPC)."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"x" * 4096)
        except OSError as exc:
            assert exc.errno == 28, exc  # ENOSPC
    return filler


def test_the_alias_names_the_transport_and_a_message_goes_round(broker):
    assert app.conf.broker_url.startswith("studyfs://") or os.environ.get("REDIS_URL")
    with connection(broker) as conn:
        assert isinstance(conn.transport, broker_fs.Transport)
        queue = conn.SimpleQueue(QUEUE)
        queue.put({"n": 1})
        assert [name for name in queued(broker) if name.endswith(".msg")]
        assert take(queue) == {"n": 1}
        queue.close()
    assert queued(broker) == []


def test_a_publish_on_a_full_disk_leaves_nothing_and_one_after_it_is_freed_goes_through(
    small_disk, settings, client
):
    options = folders(small_disk / "broker")
    with connection(options) as conn:
        queue = conn.SimpleQueue(QUEUE)  # bound while there is room
        filler = fill(small_disk)
        with pytest.raises(ChannelError, match="No space left on device"):
            queue.put({"code": "x" * 20_000})
        assert queued(options) == []  # no 0-byte, partial or temporary file
        assert "for want of space" in broker_fs.last_publish_failure()

        # /readyz says so: the disk is below the free-space floor ...
        settings.REDIS_URL = ""
        settings.CELERY_BROKER_TRANSPORT_OPTIONS = options
        checks = client.get("/readyz").json()["checks"]
        assert checks["broker"].startswith(f"RuntimeError: the disk under {small_disk}")
        assert "is full: 0.0 MB free, below 64.0 MB" in checks["broker"]
        # ... and, with no floor, the last publish's ENOSPC is the reason.
        settings.STUDY_BROKER_MIN_FREE_MB = 0
        checks = client.get("/readyz").json()["checks"]
        assert re.search(r"a publish failed \d+ s ago for want of space", checks["broker"])

        filler.unlink()
        queue.put({"code": "x" * 20_000})
        assert client.get("/readyz").json()["checks"]["broker"] == "ok"
        assert broker_fs.last_publish_failure() is None
        assert take(queue) == {"code": "x" * 20_000}
        queue.close()


def test_a_binding_on_a_full_disk_keeps_the_exchange_table_whole(small_disk):
    options = folders(small_disk / "broker")
    with connection(options) as conn:
        first = conn.SimpleQueue(QUEUE)
        filler = fill(small_disk)
        with pytest.raises(ChannelError, match="No space left on device"):
            conn.SimpleQueue(f"{QUEUE}-2")
        tables = Path(options["control_folder"])
        assert sorted(p.name for p in tables.iterdir() if not p.name.startswith(".")) == [
            f"{QUEUE}.exchange"
        ]
        assert json.loads((tables / f"{QUEUE}.exchange").read_text()) == [[QUEUE, "", QUEUE]]
        filler.unlink()
        second = conn.SimpleQueue(f"{QUEUE}-2")
        second.put({"n": 2})
        assert take(second) == {"n": 2}
        first.close()
        second.close()


def test_an_exchange_table_an_older_broker_cut_is_set_aside_and_bound_again(broker, caplog):
    table = Path(broker["control_folder"], f"{QUEUE}.exchange")
    table.write_bytes(b"")  # what kombu's own transport leaves when the disk fills
    caplog.set_level(logging.ERROR, logger="studyapp.broker_fs")
    with connection(broker) as conn:
        queue = conn.SimpleQueue(QUEUE)
        queue.put({"n": 3})
        assert take(queue) == {"n": 3}
        queue.close()
    assert json.loads(table.read_text()) == [[QUEUE, "", QUEUE]]
    assert os.listdir(broker_fs.unreadable_folder(broker)) == [table.name]
    assert "an exchange table: JSONDecodeError" in caplog.text


def test_a_publish_over_the_file_size_limit_leaves_nothing(broker):
    # Where no disk can be mounted: the kernel refuses the write (EFBIG) past RLIMIT_FSIZE.
    script = f"""
import json, resource, sys
sys.path.insert(0, {str(REPO)!r})
from kombu import Connection
from kombu.exceptions import ChannelError
import studyapp.celery  # registers studyfs://
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
with Connection("studyfs://", transport_options=json.loads({json.dumps(broker)!r})) as conn:
    queue = conn.SimpleQueue({QUEUE!r})
    try:
        queue.put({{"code": "x" * 20_000}})
    except ChannelError as exc:
        print("refused:", exc)
    queue.put({{"n": 1}})
    print("small one sent")
"""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "studyapp.settings"}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "refused:" in done.stdout and "File too large" in done.stdout, done.stdout
    assert "small one sent" in done.stdout
    left = queued(broker)
    assert len(left) == 1 and left[0].endswith(f".{QUEUE}.msg"), left
    with connection(broker) as conn:
        assert take(conn.SimpleQueue(QUEUE)) == {"n": 1}


def test_unreadable_messages_are_set_aside_and_the_next_one_served(broker, caplog):
    Path(broker["data_folder_in"], message_name(ms=1)).write_bytes(b"")
    Path(broker["data_folder_in"], message_name(ms=2)).write_bytes(b'{"body": "cut sh')
    Path(broker["data_folder_in"], message_name(ms=3)).write_bytes(b"\xff\xfe not utf-8")
    Path(broker["data_folder_in"], message_name(ms=4)).write_bytes(b'["no", "envelope"]')
    caplog.set_level(logging.ERROR, logger="studyapp.broker_fs")
    with connection(broker) as conn:
        queue = conn.SimpleQueue(QUEUE)
        queue.put({"n": 5})
        assert take(queue) == {"n": 5}
        queue.close()
    aside = sorted(os.listdir(broker_fs.unreadable_folder(broker)))
    assert [name.split("_")[0] for name in aside] == ["0001", "0002", "0003", "0004"]
    assert queued(broker) == [] and os.listdir(broker["processed_folder"]) == []
    said = [record.getMessage() for record in caplog.records]
    assert len(said) == 4 and all("Set aside an unreadable broker message" in s for s in said)
    assert "0 bytes: JSONDecodeError" in said[0]
    assert "not a message envelope" in said[3]


def test_a_temporary_file_an_interrupted_publish_left_is_removed_after_an_hour(broker):
    old = Path(broker["data_folder_out"], ".abandoned.tmp")
    new = Path(broker["data_folder_out"], ".inflight.tmp")
    old.write_bytes(b"{")
    new.write_bytes(b"{")
    an_hour_ago = time.time() - broker_fs.STALE_TEMP_SECONDS - 1
    os.utime(old, (an_hour_ago, an_hour_ago))
    with connection(broker) as conn:
        conn.SimpleQueue(QUEUE).close()  # a channel opens
    assert queued(broker) == [".inflight.tmp"]


@pytest.mark.slow
def test_a_real_worker_sets_broken_files_aside_and_serves(tmp_path):
    """A queue folder with what a full disk left (0-byte and cut files): the worker
    starts, sets them aside, logs them and runs the next task; it is still running."""
    var = tmp_path / "var"
    options = folders(var / "celery-broker")
    queue = f"q{uuid.uuid4().hex[:8]}"
    for ms, body in ((1, b""), (2, b'{"body": "eyJ')):
        Path(options["data_folder_in"], message_name(queue, ms=ms)).write_bytes(body)
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"REDIS_URL", "DATABASE_URL"} and not key.startswith(("PYTEST_", "CELERY"))
    }
    env.update(
        STUDY_VAR_DIR=str(var),
        DJANGO_SETTINGS_MODULE="studyapp.settings",
        PYTHONPATH=str(REPO),
        PYTHONUNBUFFERED="1",
    )
    log = tmp_path / "worker.log"
    celery = str(Path(sys.executable).with_name("celery"))
    with log.open("wb") as out:
        worker = subprocess.Popen(
            [celery, "-A", "studyapp", "worker", "--pool=solo", "--loglevel=INFO", "-Q", queue,
             "-n", f"{queue}@%h", "--without-gossip", "--without-mingle", "--without-heartbeat"],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        aside = broker_fs.unreadable_folder(options)
        _wait(
            lambda: aside.is_dir() and len(os.listdir(aside)) == 2,
            worker,
            log,
            "both files set aside",
        )
        options["unreadable_folder"] = str(aside)
        with connection(options) as conn:
            sent = app.send_task("celery.accumulate", args=[7], queue=queue, connection=conn)
        _wait(
            lambda: f"celery.accumulate[{sent.id}] succeeded" in log.read_text(),
            worker,
            log,
            "the task after them run",
        )
        text = log.read_text()
        assert text.count("Set aside an unreadable broker message") == 2, text
        assert "Unrecoverable error" not in text, text
        assert worker.poll() is None, text
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, 15)
            worker.wait(timeout=30)


def _wait(condition, proc: subprocess.Popen, log: Path, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        if proc.poll() is not None:
            pytest.fail(f"the worker exited ({proc.returncode}) before {what}:\n{log.read_text()}")
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}:\n{log.read_text()[-6000:]}")
