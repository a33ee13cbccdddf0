"""The study core's SQL that is not the ORM's: one module per concern.

Everything here that differs between PostgreSQL and SQLite, or reaches past the ORM,
sits behind functions that name what they do, so the services above read the same on
both databases:

- ``dialect``: which database the connection is (``is_postgres``), and ``PerDialect``:
  a rule's form on each database, picked for the connection by ``here()``;
- ``reviews``: ``move_and_log``, a review's state move, log entry and day count, and
  ``insert_unless_taken``, an Idempotency-Key's claim;
- ``bindings``: ``bind_exercises``, new exercise variants bound to today's reviews;
- ``inserts``: ``raw_insert``, model rows as raw ``INSERT`` text for those statements;
- ``bulk``: ``insert_synthetic_states``/``insert_synthetic_logs`` and the planner and
  constraint settings of ``manage.py seed_load``'s bulk loads;
- ``counts``: the counts tables' triggers (declared once, imported by the migrations),
  the ``ReviewDay`` SQL, ``net`` (the count of a log entry net of undos) and ``kept``
  (a review no undo cancelled; its ORM form is ``ReviewLog.objects.kept()``);
- ``review_days``: ``ReviewDay`` rows merged between learners and rebuilt from the log;
- ``placement``: the placement beat job's ``INSERT ... SELECT`` and the derived table
  of groups it and the reminder pass join (``GROUPS_PER_STATEMENT`` rows a statement);
- ``reminders``: the reminder pass's claim, takeover and renewal statements, and who
  gets a reminder in SQL (``recipient_sql``);
- ``item_figures``: the item analysis's per-card and per-kind statements;
- ``queue``: the due queue's dialect parts: tag names as one column, and the pause and
  the due count as SQL for the reminder pass (held equal to ``cards.due`` by tests);
- ``analysis``: the item analysis's per-kind figures and its planner settings;
- ``compiled``: ``CompiledQuery``, querysets compiled once (the one module that uses
  Django's private API, fenced by ``tests/cards/test_compiled_fence.py``).
"""
