"""One lock order for every write to a learner's reviews.

A review moves a state (whose counts the triggers of ``cards.db.counts`` keep)
and adds to its study day's ``ReviewDay``; an undo does the same in reverse. Left to
themselves the two paths lock the count rows and the day rows in opposite orders, and
PostgreSQL ends one of them as a deadlock. Each of them takes the learner's lock first,
so a learner's review writes run one after the other and wait on nothing in a cycle.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model


def learner_lock(*, learner_id: int) -> None:
    """Hold the learner's write lock until the caller's transaction ends.

    ``SELECT ... FOR NO KEY UPDATE`` of the learner's user row: it waits for another
    writer of the same learner and lets every other learner's writes and the foreign
    keys that point at the row (``FOR KEY SHARE``) pass. SQLite, which runs one writer
    at a time, leaves the clause out. The one-statement review write takes the same lock
    in SQL (``cards.db.reviews.learner_lock_sql``).
    """
    users = get_user_model().objects.select_for_update(no_key=True).filter(pk=learner_id)
    list(users.values_list("pk", flat=True))
