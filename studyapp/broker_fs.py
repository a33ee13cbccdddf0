"""The embedded broker: kombu's filesystem transport, made to survive a full disk.

With no ``REDIS_URL`` the Celery broker is a folder under ``var/`` (``studyfs://``, the
alias ``studyapp.celery`` registers for ``Transport`` here). kombu's own transport
(``kombu.transport.filesystem``) writes a message straight under its final name, so a
write that fails (ENOSPC) leaves a 0-byte or partial ``.msg`` file behind, and a worker
that reads one dies ("Unrecoverable error: JSONDecodeError"); ``bin/run`` then stops
everything, and starts crash again on the files left. Here:

- a publish writes a hidden temporary file in the queue folder (a name no queue
  matches) and renames it to its message name: a reader sees the
  whole message or none; a write that fails removes the temporary file and raises
  ``ChannelError`` (the caller's publish fails as with any broker down), and the failure
  is noted for ``/readyz`` (``disk_problem``);
- a worker claims a message by renaming it into the processed folder (atomic between
  workers, on the same disk), and one it cannot read (not UTF-8 JSON, or not a message
  envelope: the empty file of an earlier full disk) is moved to the ``unreadable``
  folder beside the queue and logged, and the worker goes on to the next message;
- temporary files an interrupted publish left are removed after an hour.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import tempfile
import threading
import time
import uuid
from pathlib import Path
from queue import Empty
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

logger = logging.getLogger(__name__)

ALIAS = "studyfs"
TEMP_PREFIX = "."
TEMP_SUFFIX = ".tmp"
STALE_TEMP_SECONDS = 60 * 60
# A publish that failed for want of space is reported for this long, unless one succeeds.
FAILURE_REPORTED_SECONDS = 15 * 60
NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)

_failure_lock = threading.Lock()
_last_failure: dict[str, Any] = {}


def unreadable_folder(options: dict[str, Any]) -> Path:
    """Where unreadable messages are set aside: ``unreadable_folder``, else ``unreadable``
    beside the queue folder."""
    given = options.get("unreadable_folder")
    if given:
        return Path(given)
    return Path(options.get("data_folder_in", "data_in")).parent / "unreadable"


def _note_publish(error: OSError | None) -> None:
    with _failure_lock:
        if error is None:
            _last_failure.clear()
        elif error.errno in NO_SPACE:
            _last_failure.update(at=time.time(), error=f"{type(error).__name__}: {error}")


def last_publish_failure(*, now: float | None = None) -> str | None:
    """The last publish of this process that failed for want of space, in words, while no
    publish has succeeded since and it is recent; else None."""
    with _failure_lock:
        failure = dict(_last_failure)
    if not failure:
        return None
    ago = (time.time() if now is None else now) - failure["at"]
    if ago > FAILURE_REPORTED_SECONDS:
        return None
    return f"a publish failed {int(ago)} s ago for want of space ({failure['error']})"


def disk_problem(folder: str | os.PathLike[str], *, min_free_bytes: int) -> str | None:
    """Why the broker's disk cannot take messages, in words; None when it can."""
    try:
        free = shutil.disk_usage(folder).free
    except OSError as exc:
        return f"the free space under {folder} cannot be read: {exc}"
    if free < min_free_bytes:
        return (
            f"the disk under {folder} is full: {free / 2**20:.1f} MB free, "
            f"below {min_free_bytes / 2**20:.1f} MB"
        )
    return last_publish_failure()


def _write_whole(path: str, body: bytes) -> None:
    """Write ``body`` to ``path`` through a hidden temporary file in the same folder and a
    rename: readers see all of it or nothing; a failure removes the temporary file."""
    fd, temporary = tempfile.mkstemp(
        dir=os.path.dirname(path), prefix=TEMP_PREFIX, suffix=TEMP_SUFFIX
    )
    try:
        with os.fdopen(fd, "wb") as handle:
            # No fsync: it would cost ~5 ms a publish, and a file a power cut leaves
            # empty is set aside by the reader like any other unreadable message.
            handle.write(body)
        os.rename(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def _is_envelope(payload: Any) -> bool:
    return isinstance(payload, dict) and isinstance(payload.get("properties"), dict)


class Channel(filesystem.Channel):
    """kombu's filesystem channel with atomic publishes and unreadable messages set aside."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._remove_stale_temporaries()

    # kombu names the second argument "message" in its base channel, "payload" here.
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        """Put ``payload`` on ``queue``: whole, or nothing left behind."""
        folder = self.data_folder_out
        name = f"{round(time.monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        try:
            _write_whole(os.path.join(folder, name), str_to_bytes(dumps(payload)))
        except OSError as exc:
            _note_publish(exc)
            raise ChannelError(f"Cannot add a message to {folder!r}: {exc}") from exc
        _note_publish(None)

    def get_table(self, exchange: str) -> list[Any]:
        """The exchange's bindings; an unreadable table (an earlier full disk cut it) is
        set aside and read as empty, until a worker binds its queues again."""
        try:
            return list(super().get_table(exchange))
        except ValueError as exc:
            path = str(self._exchange_file(exchange))
            self._set_aside(path, f"an exchange table: {type(exc).__name__}: {exc}")
            return []

    def queue_bind(
        self,
        queue: str,
        exchange: str | None = None,
        routing_key: str = "",
        arguments: Any = None,
        **kwargs: Any,
    ) -> None:
        try:
            super().queue_bind(queue, exchange, routing_key, arguments, **kwargs)
        except ChannelError:
            # kombu notes a binding in this process before writing it: forget it, so the
            # next declaration (once there is room) writes it instead of skipping it.
            name = exchange or "amq.direct"
            self.state.binding_delete(queue, name, routing_key)
            table = self.state.exchanges.get(name, {}).get("table", [])
            meta = self.typeof(name).prepare_bind(queue, name, routing_key, arguments)
            if meta in table:
                table.remove(meta)
            raise

    def _queue_bind(self, exchange: str, routing_key: str, pattern: str, queue: str) -> None:
        binding = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")

        def bind(table: list[Any]) -> list[Any] | None:
            return None if binding in table else [binding, *table]

        self._rewrite_table(exchange, bind)

    def _delete(
        self, queue: str, exchange: str, routing_key: str, pattern: str, *args: Any, **kwargs: Any
    ) -> None:
        virtual_delete = filesystem.virtual.Channel._delete
        virtual_delete(self, queue, exchange, routing_key, pattern, *args, **kwargs)
        binding = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")

        def unbind(table: list[Any]) -> list[Any] | None:
            return [row for row in table if row != binding] if binding in table else None

        self._rewrite_table(exchange, unbind)

    def _rewrite_table(self, exchange: str, change: Any) -> None:
        """Change an exchange's table under a lock of its own, written whole or not at all."""
        table_file = self._exchange_file(exchange)
        self.control_folder.mkdir(parents=True, exist_ok=True)
        lock_path = self.control_folder / f".{table_file.name}.lock"
        try:
            with open(lock_path, "ab") as lock_file:
                filesystem.lock(lock_file, filesystem.LOCK_EX)
                try:
                    table = self.get_table(exchange)
                    changed = change(table)
                    if changed is not None:
                        _write_whole(str(table_file), str_to_bytes(dumps(changed)))
                finally:
                    filesystem.unlock(lock_file)
        except OSError as exc:
            _note_publish(exc)
            raise ChannelError(f"Cannot write the exchange table {table_file}: {exc}") from exc

    def _get(self, queue: str, timeout: float | None = None) -> Any:
        """The next readable message of ``queue``; unreadable ones are set aside on the way."""
        wanted = f"{queue}.msg"
        for name in sorted(os.listdir(self.data_folder_in)):
            if name.partition(".")[2] != wanted:
                continue
            claimed = os.path.join(self.processed_folder, name)
            try:  # a rename claims it: another worker's rename of the same name fails
                os.rename(os.path.join(self.data_folder_in, name), claimed)
            except FileNotFoundError:
                continue
            except OSError as exc:
                logger.warning("Could not take the message %s: %s", name, exc)
                continue
            try:
                with open(claimed, "rb") as handle:
                    raw = handle.read()
            except OSError as exc:
                raise ChannelError(f"Cannot read file {claimed!r} from queue.") from exc
            try:
                payload = loads(bytes_to_str(raw))
            except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
                self._set_aside(claimed, f"{len(raw)} bytes: {type(exc).__name__}: {exc}")
                continue
            if not _is_envelope(payload):
                self._set_aside(claimed, f"{len(raw)} bytes: not a message envelope")
                continue
            if not self.store_processed:
                os.remove(claimed)
            return payload
        raise Empty()

    def _set_aside(self, path: str, reason: str) -> None:
        target = unreadable_folder(self.transport_options)
        try:
            target.mkdir(parents=True, exist_ok=True)
            os.rename(path, target / os.path.basename(path))
        except OSError as exc:
            logger.error(
                "Removed an unreadable broker file %s (%s); it could not be set aside in %s: %s",
                os.path.basename(path),
                reason,
                target,
                exc,
            )
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
            return
        logger.error(
            "Set aside an unreadable broker message %s (%s) in %s",
            os.path.basename(path),
            reason,
            target,
        )

    def _remove_stale_temporaries(self) -> None:
        folder = self.data_folder_out
        cutoff = time.time() - STALE_TEMP_SECONDS
        try:
            names = os.listdir(folder)
        except OSError:
            return
        for name in names:
            if not (name.startswith(TEMP_PREFIX) and name.endswith(TEMP_SUFFIX)):
                continue
            path = os.path.join(folder, name)
            try:
                if os.stat(path).st_mtime < cutoff:
                    os.remove(path)
            except OSError:
                continue


class Transport(filesystem.Transport):
    """kombu's filesystem transport over ``Channel`` (``studyfs://``)."""

    Channel = Channel
