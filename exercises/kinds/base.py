"""What every exercise kind shares: parameter specs, validation and the generated variant.

A kind is pure: it takes normalised parameters and a ``np.random.Generator`` and
returns plain JSON (``Generated``). Expected answers come from ``exercises.engine``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

SEED_MAX = 2**63 - 1
DEFAULT_RTOL = 0.01
DEFAULT_ATOL = 0.005
DEFAULT_MAX_ATTEMPTS = 3
# Hand work may round every step it writes down to this many decimals.
STEP_DECIMALS = 3
HALF_UNIT = 0.5 * 10.0**-STEP_DECIMALS  # the most writing a number to STEP_DECIMALS moves it
ROUNDING_RULE = (
    "Rounding: write every step to three decimals or more, the exponentials $e^s$ too (as "
    "the lesson's worked example does, with or without first subtracting the row's largest "
    "score). A cell is accepted within 0.005 + 1% of the expected value, widened by what "
    "those written steps can carry, and each later part is also checked against what "
    "follows from your own earlier answers, so rounding an earlier step never costs a later one."
)


class ParamError(ValueError):
    """A parameter failed validation; ``field`` names it (``params.<name>`` in the API)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class UnknownKindError(KeyError):
    def __init__(self, name: object):
        super().__init__(name)
        self.name = name
        self.message = (
            f"Unknown exercise kind {name!r}; expected one of: {', '.join(sorted(KINDS))}."
        )

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class ParamSpec:
    """One parameter: ``type`` is int, float, bool or choice."""

    type: str
    default: Any
    help: str = ""
    min: float | None = None
    max: float | None = None
    choices: tuple[Any, ...] | None = None
    multiple_of: int | None = None

    def describe(self) -> dict[str, Any]:
        """The public description of ``GET exercises/kinds/``."""
        out: dict[str, Any] = {"type": self.type, "default": self.default, "help": self.help}
        if self.min is not None:
            out["min"] = self.min
        if self.max is not None:
            out["max"] = self.max
        if self.choices is not None:
            out["choices"] = list(self.choices)
        if self.multiple_of is not None:
            out["multiple_of"] = self.multiple_of
        return out

    def json_schema(self) -> dict[str, Any]:
        """The same constraints as JSON Schema, so the OpenAPI document is exact."""
        if self.type == "bool":
            schema: dict[str, Any] = {"type": "boolean"}
        elif self.type == "choice":
            schema = {"enum": list(self.choices or ())}
        else:
            schema = {"type": "integer" if self.type == "int" else "number"}
            if self.min is not None:
                schema["minimum"] = self.min
            if self.max is not None:
                schema["maximum"] = self.max
            if self.multiple_of is not None:
                schema["multipleOf"] = self.multiple_of
        schema["default"] = self.default
        if self.help:
            schema["description"] = self.help
        return schema

    def clean(self, name: str, value: Any) -> Any:
        if self.type == "bool":
            if type(value) is not bool:
                raise ParamError(name, f"Expected true or false, got {value!r}.")
            return value
        if self.type == "choice":
            # ``True == 1`` in Python: compare types too so a boolean never picks an integer choice.
            for choice in self.choices or ():
                if type(choice) is type(value) and choice == value:
                    return value
            options = ", ".join(repr(c) for c in self.choices or ())
            raise ParamError(name, f"Expected one of {options}, got {value!r}.")
        return self._clean_number(name, value)

    def _clean_number(self, name: str, value: Any) -> int | float:
        """An int or float parameter: its type, then its range and step."""
        number: int | float
        if self.type == "int":
            number = int(value) if type(value) is float and value.is_integer() else value
            if type(number) is not int:
                raise ParamError(name, f"Expected an integer, got {value!r}.")
        else:
            if type(value) not in (int, float) or not math.isfinite(value):
                raise ParamError(name, f"Expected a finite number, got {value!r}.")
            number = float(value)
        if (self.min is not None and number < self.min) or (
            self.max is not None and number > self.max
        ):
            raise ParamError(
                name, f"Expected a value from {self.min} to {self.max}, got {number!r}."
            )
        if self.multiple_of and number % self.multiple_of:
            raise ParamError(name, f"Expected a multiple of {self.multiple_of}, got {number!r}.")
        return number


SEED_SPEC = ParamSpec(
    "int",
    None,
    "Random seed; the same kind, parameters and seed give the same inputs.",
    0,
    SEED_MAX,
)


@dataclass(frozen=True)
class Follow:
    """What an asked part is, computed from the learner's own earlier parts.

    ``value`` has the part's shape; ``uses`` names the earlier asked parts it is computed
    from, ``words`` says so to the learner ("your scores"); ``slack`` (a number or an
    array of the part's shape) widens the tolerance by what rounding the steps in between
    that are not asked (to ``STEP_DECIMALS``) can move a cell. With ``uses`` empty the
    part is computed from the inputs alone: ``slack`` then widens the expected answer's
    tolerance by what the hand steps before it carry.

    ``own_size``: the part is a difference or ratio of the parts in ``uses``, so earlier
    parts right only within their tolerance can carry it far off its own size. From right
    earlier parts it is then judged against the expected value on its own tolerance,
    widened by ``slack`` (set it to what writing the ``uses`` parts to ``STEP_DECIMALS``
    carries), not accepted merely for following; a value that follows from them but
    misses that earns the half credit of a part that follows.
    """

    value: Any
    uses: tuple[str, ...]
    words: str
    slack: Any = 0.0
    own_size: bool = False


@dataclass
class Generated:
    """One variant. ``inputs`` and ``solution`` are plain JSON; ``asks`` lists ``{name, shape}``."""

    prompt: str
    inputs: dict[str, Any]
    asks: list[dict[str, Any]]
    solution: dict[str, Any]
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL
    max_attempts: int = DEFAULT_MAX_ATTEMPTS


class ExerciseKind:
    """Base class. Subclasses set the class attributes and implement ``generate``.

    ``mistakes`` lists the codes of ``exercises.checking.MISTAKES`` that can explain a
    wrong answer to this kind; ``answers_under(inputs, recipe)`` recomputes the parts the
    way a learner making that mistake would (None when the mistake cannot apply).
    """

    name: ClassVar[str]
    title: ClassVar[str]
    description: ClassVar[str]
    params: ClassVar[dict[str, ParamSpec]]
    mistakes: ClassVar[tuple[str, ...]] = ()
    rtol: ClassVar[float] = DEFAULT_RTOL
    atol: ClassVar[float] = DEFAULT_ATOL
    max_attempts: ClassVar[int] = DEFAULT_MAX_ATTEMPTS

    def variant(
        self,
        *,
        prompt: str,
        inputs: dict[str, Any],
        asks: list[dict[str, Any]],
        solution: dict[str, Any],
    ) -> Generated:
        """One generated variant, checked with this kind's tolerance and attempts."""
        return Generated(
            prompt=prompt,
            inputs=inputs,
            asks=asks,
            solution=solution,
            rtol=self.rtol,
            atol=self.atol,
            max_attempts=self.max_attempts,
        )

    def normalize_params(self, raw: Mapping[str, Any] | None) -> dict[str, Any]:
        """Validate ``raw`` and fill defaults; ``seed`` is kept when given."""
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            raise ParamError(
                "params", f"Expected an object of parameters, got {type(raw).__name__}."
            )
        for name in raw:
            if name != "seed" and name not in self.params:
                known = ", ".join([*self.params, "seed"])
                raise ParamError(
                    name, f"Unknown parameter for kind {self.name!r}; expected one of: {known}."
                )
        out = {
            name: spec.clean(name, raw[name]) if name in raw else spec.default
            for name, spec in self.params.items()
        }
        if raw.get("seed") is not None:
            out["seed"] = SEED_SPEC.clean("seed", raw["seed"])
        return self.finish_params(out)

    def finish_params(self, params: dict[str, Any]) -> dict[str, Any]:
        """Hook for parameters that depend on each other."""
        return params

    def generate(self, params: dict[str, Any], rng: np.random.Generator) -> Generated:
        raise NotImplementedError

    def answers_under(
        self, inputs: dict[str, Any], recipe: Mapping[str, Any], decimals: int | None = None
    ) -> dict[str, np.ndarray] | None:
        """Every asked part computed the way ``recipe`` says (``{}`` is the right way).

        ``decimals`` rounds every step written down on the way, as hand work does. None
        when the recipe's mistake cannot be made on these inputs, or changes nothing by
        construction (no mask to forget, d_k = 1 to forget dividing by).
        """
        return None

    def follow_on(
        self,
        inputs: dict[str, Any],
        given: Mapping[str, np.ndarray],
        recipe: Mapping[str, Any] | None = None,
    ) -> dict[str, Follow]:
        """For each asked part computed from earlier asked parts: what it is, given the
        learner's own earlier parts, the way ``recipe`` says (None: the right way)."""
        return {}

    def degenerate(self, generated: Generated) -> str | None:
        """Why the variant teaches nothing (uniform weights, an all-zero output), or None."""
        return None

    def accepted_alternatives(self, inputs: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """Other whole answers the prompt allows: ``(what it is, solution)`` pairs."""
        return []

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.name,
            "title": self.title,
            "description": self.description,
            "params": {name: spec.describe() for name, spec in self.params.items()},
            "max_attempts": self.max_attempts,
        }

    def params_rules(self) -> list[dict[str, Any]]:
        """JSON Schema rules across parameters (each must hold), for the OpenAPI document."""
        return []

    def params_json_schema(self) -> dict[str, Any]:
        props = {name: spec.json_schema() for name, spec in self.params.items()}
        props["seed"] = {
            "type": "integer",
            "nullable": True,
            "minimum": 0,
            "maximum": SEED_MAX,
            "description": SEED_SPEC.help + " Omit it (or send null) and the server picks one.",
        }
        schema = {"type": "object", "properties": props, "additionalProperties": False}
        rules = self.params_rules()
        if rules:
            schema["allOf"] = rules
        return schema


KINDS: dict[str, ExerciseKind] = {}


def register(cls: type[ExerciseKind]) -> type[ExerciseKind]:
    KINDS[cls.name] = cls()
    return cls


def get_kind(name: str) -> ExerciseKind:
    try:
        return KINDS[name]
    except (KeyError, TypeError):
        raise UnknownKindError(name) from None


# --- The softmax as hand work does it -------------------------------------------------


def _rows_open(z: np.ndarray, mask: Any) -> np.ndarray:
    blocked = np.zeros(z.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    return np.asarray(~blocked & np.isfinite(z))


@np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore")
def softmax_by_hand(z: Any, decimals: int = STEP_DECIMALS) -> np.ndarray:
    """# (n_q, n_k) scores, minus infinity where blocked -> (n_q, n_k) weights, unrounded.

    The lesson's worked example: each e^s written to ``decimals`` decimals, no max shift,
    then each divided by the row's sum. A row whose exponentials all round to 0 (or
    overflow) has nothing to divide by that way; there hand work subtracts the row's
    largest score first. ValueError for a row with every key blocked, as ``engine.softmax``.
    """
    z = np.asarray(z, dtype=float)
    top = z.max(axis=-1, keepdims=True)
    if not np.isfinite(top).all():
        raise ValueError("a row has every key blocked")
    e = np.round(np.exp(z), decimals)
    total = e.sum(axis=-1, keepdims=True)
    shifted = np.round(np.exp(z - top), decimals)
    redo = ~np.isfinite(total) | (total <= 0)
    e = np.where(redo, shifted, e)
    weights: np.ndarray = e / e.sum(axis=-1, keepdims=True)
    return weights


@np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore")
def _hand_bound(z: np.ndarray, open_: np.ndarray, shift: np.ndarray, sigma: np.ndarray) -> Any:
    """Per cell: the most the weights move when each open e^(s - shift) is written with
    an error of HALF_UNIT plus what an error ``sigma`` in its score makes; inf where
    the written exponentials could sum to nothing."""
    e = np.where(open_, np.exp(np.where(open_, z, 0.0) - shift), 0.0)
    eps = np.where(open_, HALF_UNIT + e * np.expm1(sigma), 0.0)
    total, slack = e.sum(axis=-1, keepdims=True), eps.sum(axis=-1, keepdims=True)
    w = e / total
    # w_j = e_j / S; with every e_k off by at most eps_k the weight moves by at most
    # (eps_j (1 - w_j) + w_j sum_{k != j} eps_k) / (S - sum_k eps_k).
    bound = (eps * (1 - w) + w * (slack - eps)) / (total - slack)
    return np.where(np.isfinite(bound) & (total > slack), bound, np.inf)


def softmax_hand_slack(z: Any, mask: Any = None, score_error: Any = 0.0) -> np.ndarray:
    """# (n_q, n_k) scores, bool mask (True = blocked) -> (n_q, n_k): how far the softmax
    done by hand (``softmax_by_hand`` and its shifted form, each e^s written to
    ``STEP_DECIMALS`` decimals) can land from the exact weights, before the weights
    themselves are rounded. ``score_error`` bounds how far each written score is off.

    A row that may read one key or none has weight 1 or nothing: no slack.
    """
    z = np.asarray(z, dtype=float)
    open_ = _rows_open(z, mask)
    sigma = np.broadcast_to(np.asarray(score_error, dtype=float), z.shape)
    top = np.where(open_, z, -np.inf).max(axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    plain = _hand_bound(z, open_, np.zeros_like(top), sigma)
    shifted = _hand_bound(z, open_, top, sigma)
    # Either way is hand work; without a shift only where it leaves something to divide by.
    slack = np.where(np.isfinite(plain), np.maximum(plain, shifted), shifted)
    several = open_.sum(axis=-1, keepdims=True) >= 2
    out: np.ndarray = np.where(open_ & several & np.isfinite(slack), slack, 0.0)
    return out


def softmax_by_hand_fails(z: Any, mask: Any = None, score_error: Any = 0.0) -> bool:
    """Does some row that reads two or more keys leave the lesson's way (each e^s to
    ``STEP_DECIMALS`` decimals, no shift) with exponentials that may round to nothing?"""
    z = np.asarray(z, dtype=float)
    open_ = _rows_open(z, mask)
    sigma = np.broadcast_to(np.asarray(score_error, dtype=float), z.shape)
    plain = _hand_bound(z, open_, np.zeros((*z.shape[:-1], 1)), sigma)
    several = open_.sum(axis=-1) >= 2
    return bool((~np.isfinite(plain).all(axis=-1) & several).any())


def scaled_score_error(scores: Any, root: float) -> np.ndarray:
    """How far a score written by hand can be off when it is a whole-number dot product
    divided by ``root`` written to ``STEP_DECIMALS`` decimals, the quotient written so too
    (0 where ``root`` is 1: the score is the dot product itself)."""
    s = np.abs(np.asarray(scores, dtype=float))
    if root == 1:
        return np.zeros_like(s)
    return np.asarray(HALF_UNIT + s * HALF_UNIT / (root - HALF_UNIT))


def round_figures(x: Any, figures: int) -> np.ndarray:
    """``x`` written to ``figures`` significant figures."""
    a = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore"):
        exponent = np.floor(np.log10(np.abs(np.where(a == 0, 1.0, a))))
    scale = 10.0 ** (figures - 1 - exponent)
    out: np.ndarray = np.round(a * scale) / scale
    return out


# --- Plain JSON and Markdown helpers ------------------------------------------------


def as_json(a: np.ndarray | float) -> Any:
    """Floats rounded to 12 decimals: stable JSON without float noise, far below any tolerance."""
    arr = np.asarray(a, dtype=float)
    return np.round(arr, 12).tolist()


def _num(x: float) -> str:
    if float(x).is_integer():
        return str(int(x))
    return f"{x:.4g}"


def tex_matrix(a: Any) -> str:
    """A matrix (list of rows or array) as ``\\begin{pmatrix}``; booleans as 1/0 would mislead, so T/F."""
    rows = a.tolist() if isinstance(a, np.ndarray) else a
    body = r" \\ ".join(
        " & ".join(("T" if c else "F") if isinstance(c, bool) else _num(c) for c in row)
        for row in rows
    )
    return r"\begin{pmatrix}" + body + r"\end{pmatrix}"


def tex_vector(v: Any) -> str:
    vals = v.tolist() if isinstance(v, np.ndarray) else v
    return "(" + ", ".join(_num(x) for x in vals) + ")"
