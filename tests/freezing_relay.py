"""A TCP relay to PostgreSQL that can freeze, as a SIGSTOPped server does: the kernel
still takes the client's bytes, and no answer ever comes until it is thawed.

Used by tests/cards/test_database_timeouts.py (one test's connection) and by
``benchmarks/bench_frozen_db.py`` (gunicorn's workers).
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import time


class FreezingRelay:
    """Relays 127.0.0.1:``port`` to ``host``:``port`` while ``frozen`` is clear."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.server = socket.create_server(("127.0.0.1", 0), backlog=512)
        self.port = self.server.getsockname()[1]
        self.frozen = threading.Event()
        self.stopped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            # The upstream connection is made at once; nothing crosses while frozen.
            upstream = socket.create_connection(self.target)
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        while not self.stopped.is_set():
            if self.frozen.is_set():
                time.sleep(0.01)
                continue
            try:
                ready, _, _ = select.select([src], [], [], 0.05)
                if not ready:
                    continue
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
            except (OSError, ValueError):  # closed by the other direction's pump
                break
        for sock in (src, dst):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()

    def close(self) -> None:
        self.stopped.set()
        self.server.close()
