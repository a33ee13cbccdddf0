"""What both apps share: pagination, the API's error shape, strict serializer fields, id
parsing, the read-only admin base, and Markdown with math (with its template filter).

It imports neither ``cards`` nor ``exercises`` nor the rest of ``studyapp``, so either app
may import it without breaking the one-way rule studyapp -> cards -> exercises.
"""
