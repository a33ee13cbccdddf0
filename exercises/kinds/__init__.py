"""Exercise kinds: a registry of generators of numeric attention exercises.

``KINDS`` maps a name to its kind, in the catalogue's order; ``get_kind(name)`` raises
``UnknownKindError`` (a ``KeyError``) for an unknown name. Importing this package imports
every module in it, and each kind class registers itself there with ``@register``: a new
kind is a new module of this package (or a class in the module of its family), and
nothing else here names it.
"""

import importlib
import pkgutil

from exercises.kinds.base import (
    KINDS,
    VARIANT_SEED_MAX,
    ExerciseKind,
    Generated,
    ParamError,
    ParamSpec,
    UnknownKindError,
    get_kind,
)

# The order the modules are imported in is the order of KINDS: the catalogue
# (GET exercises/kinds/), the exercise page's list and the OpenAPI ``kind`` enum. These
# come first, in this order; any other module of the package follows, by name; ``LAST``
# closes the list. Never reorder these: the schema would change.
FIRST = ("attention", "projection", "masked", "multi_head", "theory")
LAST = ("ablation",)


def kind_modules() -> list[str]:
    """The package's modules in the catalogue's order (the shared ones, such as base, register
    nothing)."""
    found = sorted(info.name for info in pkgutil.iter_modules(__path__))
    rest = [name for name in found if name not in FIRST + LAST]
    return [*FIRST, *rest, *LAST]


for _module in kind_modules():
    importlib.import_module(f"{__name__}.{_module}")

from exercises.kinds.theory import quadratic_share  # noqa: E402  (after the kinds registered)

__all__ = [
    "KINDS",
    "VARIANT_SEED_MAX",
    "ExerciseKind",
    "Generated",
    "ParamError",
    "ParamSpec",
    "UnknownKindError",
    "get_kind",
    "kind_modules",
    "quadratic_share",
]
