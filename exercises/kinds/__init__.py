"""Exercise kinds: a registry of generators of numeric attention exercises.

``KINDS`` maps a name to its kind; ``get_kind(name)`` raises ``UnknownKindError``
(a ``KeyError``) for an unknown name. Importing this package registers every kind.
"""

# The import order is the order of KINDS: the catalogue, the exercise page's list and the
# OpenAPI ``kind`` enum. Add a kind's module before ablation, never reorder these.
# isort: off
from exercises.kinds import attention  # noqa: F401  (registers the kinds)
from exercises.kinds import projection  # noqa: F401
from exercises.kinds import masked  # noqa: F401
from exercises.kinds import multi_head  # noqa: F401
from exercises.kinds import theory  # noqa: F401

# isort: on
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
from exercises.kinds.theory import quadratic_share

__all__ = [
    "KINDS",
    "VARIANT_SEED_MAX",
    "ExerciseKind",
    "Generated",
    "ParamError",
    "ParamSpec",
    "UnknownKindError",
    "get_kind",
    "quadratic_share",
]

# Registered after the kinds above, so the catalogue lists it last.
from exercises.kinds import ablation  # noqa: F401
