"""The floor under the API: the due page and a review submission as bare WSGI, no framework.

What the service's request must do and nothing more, written by hand: one psycopg
connection per process (autocommit, psycopg's server-side prepared statements), the
token read with the learner's profile, the study day, then

* ``GET /bench/floor/due/``: the due count from the state counts, the page of 20 with
  tags, lapses and today's bindings, and the memory its states keep with the learner's
  fitted curve decay, for each item's retrievability (the statements ``reviews/due/``
  runs), answered with ``json.dumps``;
* ``POST /bench/floor/reviews/`` (``{"card": id, "result": "pass"|"fail"}``): the state
  read with its card's kind, the ladder's next rung (``cards.ladder``, pure), and the
  one statement that takes the learner's lock, moves the state under its condition,
  appends the log entry and counts it in its day, as ``POST reviews/`` does on
  PostgreSQL; answered 201 with the review's fields.

``benchmarks/load_wsgi.py`` serves it beside the service in the same gunicorn workers,
and ``benchmarks/bench_load`` measures the two in interleaved rounds. It is a yardstick,
not a service: no throttles, no CSRF, no security headers, errors as bare statuses.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
from typing import Any

import psycopg

from cards import ladder
from cards.db.counts import kept
from cards.lapses import is_leech

PAGE_SIZE = 20
# As the settings read it: unset, the ladder's default.
LADDER_DAYS = ladder.parse_ladder(os.environ.get("STUDY_LADDER_DAYS") or ladder.describe(sep=","))

TOKEN_SQL = """
SELECT u.id, u.is_active, p.timezone, p.day_starts_at, p.pause_start, p.pause_days
FROM authtoken_token t JOIN auth_user u ON u.id = t.user_id
LEFT JOIN cards_learnerprofile p ON p.user_id = u.id
WHERE t.key = %s
"""

COUNT_SQL = """
SELECT COALESCE((SELECT SUM(n) FROM cards_reviewstatecount
                 WHERE learner_id = %(learner)s AND due_on <= %(today)s AND NOT suspended), 0)
     - (SELECT COUNT(*) FROM cards_reviewstate
        WHERE learner_id = %(learner)s AND scheduled AND due_on <= %(today)s
          AND NOT suspended AND buried_on = %(today)s)
"""

PAGE_SQL = """
SELECT s.step, s.due_on, s.card_id, d.slug, c.key, c.kind, c.prompt, c.answer, c.exercise,
       c.lab, c.points, c.position, c.is_active, c.created_at, c.updated_at,
       ARRAY(SELECT t.name FROM cards_tag t JOIN cards_card_tags ct ON ct.tag_id = t.id
             WHERE ct.card_id = s.card_id ORDER BY t.name),
       COALESCE((SELECT n FROM cards_lapsecount l
                 WHERE l.card_id = s.card_id AND l.learner_id = s.learner_id), 0),
       (SELECT b.exercise_id FROM cards_exercisebinding b
        JOIN exercises_exercise e ON e.id = b.exercise_id
        WHERE b.card_id = s.card_id AND b.learner_id = %(learner)s
          AND b.study_day = %(today)s AND NOT (e.attempts_used > 0 AND b.review_id IS NULL)),
       c.lesson_section
FROM cards_reviewstate s
JOIN cards_card c ON c.id = s.card_id JOIN cards_deck d ON d.id = c.deck_id
WHERE s.learner_id = %(learner)s AND s.scheduled AND NOT s.suspended
  AND s.due_on <= %(today)s AND s.buried_on IS DISTINCT FROM %(today)s
ORDER BY s.due_on, s.id
LIMIT %(limit)s
"""

# The memory the page's states keep and the learner's fitted curve decay, in one
# statement, as the API reads them for each item's retrievability
# (``cards.db.memory.page_memory``).
MEMORY_SQL = """
SELECT s.card_id, s.stability, s.last_review_day,
       s.memory_as_of IS NOT DISTINCT FROM s.last_reviewed_at,
       (SELECT (m.parameters ->> 20)::float8 FROM cards_memoryparameters m
        WHERE m.learner_id = %(learner)s AND m.fitted)
FROM cards_reviewstate s
WHERE s.learner_id = %(learner)s AND s.card_id = ANY(%(cards)s)
"""

# A state whose memory is not current (a review or an undo since it was stored) is
# replayed, as the API does: its kept log and the learner's fitted parameters, in one.
RECALL_SQL = f"""
SELECT l.card_id, l.study_day, l.result, l.reviewed_at, l.id, NULL::jsonb
FROM cards_reviewlog l
WHERE l.learner_id = %(learner)s AND l.card_id = ANY(%(cards)s) AND {kept("l")}
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL, m.parameters FROM cards_memoryparameters m
WHERE m.learner_id = %(learner)s AND m.fitted
"""

STATE_SQL = """
SELECT s.id, s.step, s.due_on, c.kind
FROM cards_reviewstate s JOIN cards_card c ON c.id = s.card_id
WHERE s.learner_id = %s AND s.card_id = %s AND s.scheduled
"""

MOVE_AND_LOG_SQL = """
WITH locked AS (SELECT FROM auth_user WHERE id = %(learner)s FOR NO KEY UPDATE), moved AS (
    UPDATE cards_reviewstate SET step = %(step)s, due_on = %(due_on)s,
        last_reviewed_at = %(at)s, updated_at = %(at)s
    WHERE id = %(state)s AND step = %(step_before)s AND due_on = %(due_before)s
      AND EXISTS (SELECT FROM locked)
    RETURNING id
), logged AS (
    INSERT INTO cards_reviewlog (learner_id, card_id, reviewed_at, study_day, result,
        step_before, step_after, interval_days, due_before, due_after, idempotency_key,
        answer_text, undo_of_id)
    SELECT %(learner)s, %(card)s, %(at)s, %(today)s, %(result)s, %(step_before)s,
        %(step)s, %(interval)s, %(due_before)s, %(due_on)s, '', '', NULL FROM moved
    RETURNING id, learner_id, study_day, due_before
), counted AS (
    INSERT INTO cards_reviewday (learner_id, study_day, reviews, passes, min_due_before)
    SELECT learner_id, study_day, 1, %(passed)s, due_before FROM logged
    ON CONFLICT (learner_id, study_day) DO UPDATE SET
        reviews = cards_reviewday.reviews + EXCLUDED.reviews,
        passes = cards_reviewday.passes + EXCLUDED.passes,
        min_due_before = LEAST(cards_reviewday.min_due_before, EXCLUDED.min_due_before)
)
SELECT id FROM logged
"""

_local = threading.local()


def _connection() -> psycopg.Connection:
    conn = getattr(_local, "conn", None)
    if conn is None or conn.closed:
        conn = _local.conn = psycopg.connect(os.environ["DATABASE_URL"], autocommit=True)
    return conn


def _json_default(value: Any) -> str:
    if isinstance(value, dt.datetime):
        text = value.isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text
    if isinstance(value, dt.date):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _answer(start_response, status: str, body: Any) -> list[bytes]:
    data = json.dumps(body, default=_json_default, separators=(",", ":")).encode()
    start_response(
        status, [("Content-Type", "application/json"), ("Content-Length", str(len(data)))]
    )
    return [data]


def _learner(conn: psycopg.Connection, environ: dict, now: dt.datetime):
    key = environ.get("HTTP_AUTHORIZATION", "").removeprefix("Token ")
    row = conn.execute(TOKEN_SQL, [key]).fetchone()
    if row is None or not row[1]:
        return None
    learner_id, _, tz, day_starts_at, pause_start, pause_days = row
    today = ladder.study_day(now, tz or "UTC", 4 if day_starts_at is None else day_starts_at)
    return learner_id, today, ladder.in_pause(today, pause_start, pause_days or 0)


def due_page(environ: dict, start_response) -> list[bytes]:
    conn = _connection()
    learner = _learner(conn, environ, dt.datetime.now(dt.UTC))
    if learner is None:
        return _answer(start_response, "401 Unauthorized", {"detail": "Invalid token."})
    learner_id, today, paused = learner
    args = {"learner": learner_id, "today": today, "limit": PAGE_SIZE}
    count = 0 if paused else conn.execute(COUNT_SQL, args).fetchone()[0]
    rows = [] if paused or not count else conn.execute(PAGE_SQL, args).fetchall()
    recall = _retrievability(conn, learner_id, [r[2] for r in rows], today)
    results = [
        {
            "card": {
                "id": r[2],
                "deck": r[3],
                "key": r[4],
                "kind": r[5],
                "prompt": r[6],
                "answer": r[7],
                "tags": r[15],
                "exercise": None
                if r[8] is None
                else {"kind": r[8].get("kind"), "params": r[8].get("params") or {}},
                "lab": None if r[9] is None else {"slug": r[9]},
                "points": list(r[10] or []),
                "position": r[11],
                "active": r[12],
                "created_at": r[13],
                "updated_at": r[14],
                "lesson_section": r[18],
            },
            "step": r[0],
            "interval_days": ladder.interval_days(r[0], LADDER_DAYS),
            "due_on": r[1],
            "leech": is_leech(r[16]),
            "retrievability": recall.get(r[2]),
            **({"exercise": r[17]} if r[5] == "exercise" else {}),
        }
        for r in rows
    ]
    body = {"today": today, "count": count, "next": None, "previous": None, "results": results}
    return _answer(start_response, "200 OK", body)


def _retrievability(
    conn: psycopg.Connection, learner_id: int, card_ids: list[int], today: dt.date
) -> dict[int, float]:
    """Today's predicted recall of the page's cards from the memory their states keep,
    by the service's own functions; a memory that is not current is replayed."""
    if not card_ids:
        return {}
    from cards.services.memory import recall_from_memory

    args = {"learner": learner_id, "cards": card_ids}
    recall, stale = recall_from_memory(conn.execute(MEMORY_SQL, args).fetchall(), today=today)
    if stale:
        rows = conn.execute(RECALL_SQL, {"learner": learner_id, "cards": stale}).fetchall()
        recall.update(_replayed(rows, today))
    return recall


def _replayed(rows: list[tuple[Any, ...]], today: dt.date) -> dict[int, float]:
    """``RECALL_SQL``'s rows replayed: its reviews oldest first, under the fitted
    parameters when a row carries them, else the defaults."""
    import numpy as np

    from cards import memory
    from cards.services.memory import Log, retrievability_of

    w = next((row[5] for row in rows if row[0] is None), None)
    reviews = sorted((row for row in rows if row[0] is not None), key=lambda row: (row[3], row[4]))
    n = len(reviews)
    log = Log(
        learners=np.zeros(n, np.int64),
        cards=np.array([row[0] for row in reviews], np.int64),
        days=np.array([row[1].toordinal() for row in reviews], np.int64),
        passed=np.array([row[2] == "pass" for row in reviews], bool),
        times=np.zeros(n),
    )
    return retrievability_of(log=log, w=w or list(memory.DEFAULT_PARAMETERS), today=today)


def review_submit(environ: dict, start_response) -> list[bytes]:
    conn = _connection()
    now = dt.datetime.now(dt.UTC)
    learner = _learner(conn, environ, now)
    if learner is None:
        return _answer(start_response, "401 Unauthorized", {"detail": "Invalid token."})
    learner_id, today, _ = learner
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        data = json.loads(environ["wsgi.input"].read(length))
        card, result = int(data["card"]), data["result"]
        if result not in ("pass", "fail"):
            raise ValueError(result)
    except (ValueError, KeyError, TypeError):
        return _answer(start_response, "400 Bad Request", {"detail": "card and result"})
    state = conn.execute(STATE_SQL, [learner_id, card]).fetchone()
    if state is None or state[3] not in ("recall", "interview"):
        return _answer(start_response, "404 Not Found", {"detail": "Not scheduled."})
    state_id, step_before, due_before, _ = state
    if due_before > today:
        return _answer(start_response, "409 Conflict", {"detail": "Not due.", "due_on": due_before})
    schedule = ladder.review(step_before, result, today, LADDER_DAYS)
    args = {
        "learner": learner_id,
        "card": card,
        "state": state_id,
        "step": schedule.step,
        "due_on": schedule.due_on,
        "interval": schedule.interval_days,
        "step_before": step_before,
        "due_before": due_before,
        "at": now,
        "today": today,
        "result": result,
        "passed": int(result == "pass"),
    }
    logged = conn.execute(MOVE_AND_LOG_SQL, args).fetchone()
    if logged is None:
        return _answer(start_response, "409 Conflict", {"detail": "Not due.", "due_on": due_before})
    body = {
        "id": logged[0],
        "card": card,
        "result": result,
        "reviewed_at": now,
        "study_day": today,
        "step_before": step_before,
        "step": schedule.step,
        "interval_days": schedule.interval_days,
        "due_before": due_before,
        "due_on": schedule.due_on,
        "undo_of": None,
        "answer_text": "",
    }
    return _answer(start_response, "201 Created", body)


ROUTES = {
    ("GET", "/bench/floor/due/"): due_page,
    ("POST", "/bench/floor/reviews/"): review_submit,
}


def application(environ: dict, start_response) -> list[bytes]:
    """The floor's two routes; anything else is a 404."""
    route = ROUTES.get((environ["REQUEST_METHOD"], environ.get("PATH_INFO", "")))
    if route is None:
        return _answer(start_response, "404 Not Found", {"detail": "Not found."})
    return route(environ, start_response)
