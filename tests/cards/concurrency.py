"""Running writers at once against a real database, for the tests of concurrent reviews."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from django.db import connection
from rest_framework.test import APIClient


def in_threads(jobs: Sequence[tuple], run: Callable[..., Any]) -> list:
    """``run(*job)`` for every job, each in its own thread, all released at once.

    Returns what each call returned, or the exception it raised, in the order they
    finished. Each thread closes its own database connection.
    """
    barrier = threading.Barrier(len(jobs))
    results: list = []

    def work(*job):
        try:
            barrier.wait()
            results.append(run(*job))
        except Exception as error:  # reported through the results
            results.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=job) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def post_review(token: str, card, result: str) -> int:
    """``POST /api/v1/reviews/`` as the holder of ``token``: the status code."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    body = {"card": card.pk, "result": result}
    return client.post("/api/v1/reviews/", body, format="json").status_code
