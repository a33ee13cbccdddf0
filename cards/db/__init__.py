"""The study core's SQL that is not the ORM's: one module per concern.

Everything here that differs between PostgreSQL and SQLite, or reaches past the ORM
(``compiled``: Django's query compiler), sits behind functions that name what they
do, so the services above read the same on both databases.
"""
