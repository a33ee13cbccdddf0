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

from exercises.cells import part_words
from exercises.checking.marked_kind import Follow as Follow  # the kinds' own name for it
from exercises.kinds.worked import Step, answer_steps

VARIANT_SEED_MAX = 2**63 - 1  # the largest seed a variant takes: a signed 64-bit integer
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
        number = self._typed_number(name, value)
        if (self.min is not None and number < self.min) or (
            self.max is not None and number > self.max
        ):
            raise ParamError(
                name, f"Expected a value from {self.min} to {self.max}, got {number!r}."
            )
        if self.multiple_of and number % self.multiple_of:
            raise ParamError(name, f"Expected a multiple of {self.multiple_of}, got {number!r}.")
        return number

    def _typed_number(self, name: str, value: Any) -> int | float:
        # An int parameter takes an integer (or a float that is one); a float one any finite
        # number, as a float.
        number: int | float
        if self.type == "int":
            number = int(value) if type(value) is float and value.is_integer() else value
            if type(number) is not int:
                raise ParamError(name, f"Expected an integer, got {value!r}.")
            return number
        if type(value) not in (int, float) or not math.isfinite(value):
            raise ParamError(name, f"Expected a finite number, got {value!r}.")
        return float(value)


SEED_SPEC = ParamSpec(
    "int",
    None,
    "Random seed; the same kind, parameters and seed give the same inputs.",
    0,
    VARIANT_SEED_MAX,
)


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
    # Part -> the hint after a wrong answer: what to compute, from what, over which axis.
    hints: ClassVar[dict[str, str]] = {}

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

    def mistake_text(self, code: str, inputs: dict[str, Any]) -> str | None:
        """What the diagnosis says for mistake ``code`` on these inputs, where the kind
        words it for the case (None: the mistake's own text)."""
        return None

    def accepted_alternatives(self, inputs: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """Other whole answers the prompt allows: ``(what it is, solution)`` pairs."""
        return []

    def hint(self, part: str, inputs: dict[str, Any]) -> str:
        """What to compute for ``part``, from what and along which axis; never its number."""
        return self.hints.get(part) or (
            f"Work {part_words(part)} out again from the inputs in the prompt, one written "
            "step at a time, in the order the prompt asks for the parts."
        )

    def worked_steps(
        self, inputs: dict[str, Any], solution: Mapping[str, Any], asks: list[dict[str, Any]]
    ) -> list[Step]:
        """The worked solution, step by step (``exercises.kinds.worked``); by default one
        step per asked part."""
        return answer_steps(asks, solution)

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
            "maximum": VARIANT_SEED_MAX,
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
