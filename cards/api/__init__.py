"""REST endpoints of the study core: parse, call one service or selector, serialize.

One module per resource: ``accounts``, ``decks``, ``reviews`` and ``controls``; what
they share is in ``common``.
"""
