"""The labs, in the order the lab list shows them.

``LABS`` maps each slug to its ``Lab`` (``labs.spec``); ``lab(slug)`` raises KeyError for
an unknown slug. Each module holds one lab or a small group: its prompt, starter code,
reference and mistake sources (run only in the sandbox), its calls and its judge.
"""

from __future__ import annotations

from dataclasses import replace

from labs.catalogue import attention, block, heads, positions, residual, softmax
from labs.spec import Lab

_ORDER = (
    softmax.LAB,
    attention.ATTENTION,
    attention.CAUSAL,
    heads.MULTI_HEAD,
    heads.NORM,
    positions.LAB,
    block.LAB,
    residual.LAB,
)

LABS: dict[str, Lab] = {
    each.slug: replace(each, position=i) for i, each in enumerate(_ORDER, start=1)
}


def lab(slug: str) -> Lab:
    """The lab called ``slug``; KeyError when there is none."""
    try:
        return LABS[slug]
    except (KeyError, TypeError):
        raise KeyError(slug) from None


__all__ = ["LABS", "lab"]
