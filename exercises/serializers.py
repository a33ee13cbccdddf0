# One module on purpose: every request and response shape of the exercise API, as the house layout keeps them.
"""Request parsing and response shapes of the exercise API and the attention playground.

Numbers are JSON numbers only: a boolean or a numeric string where a number belongs is
a 400, so what the schema says is exactly what is accepted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from exercises.cells import part_words
from exercises.kinds import KINDS
from exercises.models import Exercise
from exercises.playground import PLAYGROUND_MAX, PLAYGROUND_MAX_ABS
from exercises.predictions import first_prediction
from exercises.presets import PRESETS, prediction_choices
from exercises.services import attempts_summary, prediction_state, solution_if_revealed
from studyapp.common.fields import StrictBooleanField

ANY_JSON: dict[str, Any] = {}
NUMBER_GRID = {
    "type": "array",
    "minItems": 1,
    "maxItems": PLAYGROUND_MAX,
    "items": {
        "type": "array",
        "minItems": 1,
        "maxItems": PLAYGROUND_MAX,
        "items": {"type": "number", "minimum": -PLAYGROUND_MAX_ABS, "maximum": PLAYGROUND_MAX_ABS},
    },
}
BOOL_GRID = {
    "type": "array",
    "minItems": 1,
    "maxItems": PLAYGROUND_MAX,
    "items": {
        "type": "array",
        "minItems": 1,
        "maxItems": PLAYGROUND_MAX,
        "items": {"type": "boolean"},
    },
}


def _rectangular(value: Any, what: str, cell_ok, cell_words: str) -> list[list[Any]]:
    if not isinstance(value, list) or not value:
        raise serializers.ValidationError(f"Expected a non-empty list of rows of {cell_words}.")
    if len(value) > PLAYGROUND_MAX:
        raise serializers.ValidationError(
            f"Expected at most {PLAYGROUND_MAX} rows (tokens), got {len(value)}."
        )
    width = None
    for r, row in enumerate(value):
        if not isinstance(row, list) or not row:
            raise serializers.ValidationError(f"Row {r} must be a non-empty list of {cell_words}.")
        if width is None:
            width = len(row)
            if width > PLAYGROUND_MAX:
                raise serializers.ValidationError(
                    f"Expected at most {PLAYGROUND_MAX} columns, got {width}."
                )
        elif len(row) != width:
            raise serializers.ValidationError(
                f"The {what} is ragged: row 0 has {width} entries, row {r} has {len(row)}."
            )
        for c, cell in enumerate(row):
            problem = cell_ok(cell)
            if problem:
                raise serializers.ValidationError(f"Entry [{r}, {c}] {problem}.")
    return value


def _finite_number(cell: Any) -> str | None:
    if type(cell) not in (int, float):
        kind = "a boolean" if isinstance(cell, bool) else type(cell).__name__
        return f"is {kind}, not a number"
    try:
        ok = math.isfinite(cell) and abs(cell) <= PLAYGROUND_MAX_ABS
    except OverflowError:
        ok = False
    if not ok:
        return f"must be a finite number from -{PLAYGROUND_MAX_ABS:g} to {PLAYGROUND_MAX_ABS:g}"
    return None


def _boolean(cell: Any) -> str | None:
    return None if isinstance(cell, bool) else "must be true (blocked) or false"


@extend_schema_field(NUMBER_GRID)
class MatrixField(serializers.Field):
    """A non-empty rectangular matrix of finite JSON numbers, at most 256 x 256."""

    def to_internal_value(self, data):
        return np.array(_rectangular(data, "matrix", _finite_number, "numbers"), dtype=float)

    def to_representation(self, value):
        return np.asarray(value).tolist()


@extend_schema_field(
    {
        "oneOf": [{"type": "string", "enum": ["none", "causal"]}, BOOL_GRID],
        "default": "none",
        "description": (
            '"none", "causal", or a boolean matrix (queries \N{MULTIPLICATION SIGN} keys) in which true means '
            "blocked: that score becomes minus infinity before the softmax."
        ),
    }
)
class MaskField(serializers.Field):
    def to_internal_value(self, data):
        if isinstance(data, str):
            if data in ("none", "causal"):
                return data
            raise serializers.ValidationError(
                f'Expected "none", "causal" or a boolean matrix, got {data!r}.'
            )
        return np.array(_rectangular(data, "mask", _boolean, "booleans"), dtype=bool)

    def to_representation(self, value):
        return value if isinstance(value, str) else np.asarray(value).tolist()


PROJECTED = ("X", "W_Q", "W_K", "W_V")
DIRECT = ("Q", "K", "V")


class RefusesUnknownFields(serializers.Serializer):
    """A body field the serializer does not know is a 400, not silently dropped: a
    misspelt option would otherwise change the answer without a word."""

    unknown_hint = ""

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            unknown = [str(name) for name in data if name not in self.fields]
            if unknown:
                expected = ", ".join(self.fields)
                raise serializers.ValidationError(
                    {
                        name: [f"Unknown field; expected only {expected}.{self.unknown_hint}"]
                        for name in unknown
                    }
                )
        return super().to_internal_value(data)


class PlaygroundRequestSerializer(RefusesUnknownFields):
    """Either {Q, K, V} or {X, W_Q, W_K, W_V}, with an optional mask and scale."""

    Q = MatrixField(required=False, help_text="Queries (n_q, d_k).")
    K = MatrixField(required=False, help_text="Keys (n_k, d_k).")
    V = MatrixField(required=False, help_text="Values (n_k, d_v).")
    X = MatrixField(required=False, help_text="Token vectors (n, d_model), instead of Q, K, V.")
    W_Q = MatrixField(required=False, help_text="(d_model, d_k)")
    W_K = MatrixField(required=False, help_text="(d_model, d_k)")
    W_V = MatrixField(required=False, help_text="(d_model, d_v)")
    mask = MaskField(required=False, default="none")
    scale = StrictBooleanField(required=False, default=True, help_text="Divide by sqrt(d_k).")

    def validate(self, attrs):
        direct = [name for name in DIRECT if name in attrs]
        projected = [name for name in PROJECTED if name in attrs]
        if direct and projected:
            raise serializers.ValidationError(
                {
                    name: ["Give either Q, K, V or X, W_Q, W_K, W_V, not both."]
                    for name in direct + projected
                }
            )
        if not direct and not projected:
            raise serializers.ValidationError(
                {"non_field_errors": ["Give either Q, K and V, or X, W_Q, W_K and W_V."]}
            )
        form = DIRECT if direct else PROJECTED
        missing = [name for name in form if name not in attrs]
        if missing:
            raise serializers.ValidationError(
                {
                    name: [f"Required together with {', '.join(n for n in form if n != name)}."]
                    for name in missing
                }
            )
        return attrs


class PlaygroundResponseSerializer(serializers.Serializer):
    X = serializers.ListField(
        child=serializers.ListField(child=serializers.FloatField()), required=False
    )
    W_Q = serializers.ListField(
        child=serializers.ListField(child=serializers.FloatField()), required=False
    )
    W_K = serializers.ListField(
        child=serializers.ListField(child=serializers.FloatField()), required=False
    )
    W_V = serializers.ListField(
        child=serializers.ListField(child=serializers.FloatField()), required=False
    )
    Q = serializers.ListField(child=serializers.ListField(child=serializers.FloatField()))
    K = serializers.ListField(child=serializers.ListField(child=serializers.FloatField()))
    V = serializers.ListField(child=serializers.ListField(child=serializers.FloatField()))
    scores = serializers.ListField(
        child=serializers.ListField(child=serializers.FloatField()),
        help_text="Q K^T / sqrt(d_k) (or Q K^T without scale), before masking.",
    )
    weights = serializers.ListField(
        child=serializers.ListField(child=serializers.FloatField()),
        help_text="Row-wise softmax after masking; blocked entries are exactly 0.",
    )
    output = serializers.ListField(child=serializers.ListField(child=serializers.FloatField()))
    mask = serializers.ListField(
        child=serializers.ListField(child=serializers.BooleanField()),
        help_text="The mask applied, true = blocked.",
    )
    scale = serializers.BooleanField()
    shapes = serializers.DictField(
        child=serializers.ListField(child=serializers.IntegerField()),
        help_text="Each matrix's shape [rows, columns].",
    )


# --- Exercises ------------------------------------------------------------------------


class ExerciseCreateSerializer(RefusesUnknownFields):
    """``{kind, params}``; ``params`` are checked by the kind (see ``exercises/kinds/``)."""

    unknown_hint = " Parameters, the seed among them, go inside params."
    kind = serializers.ChoiceField(choices=list(KINDS))
    params = serializers.JSONField(required=False, default=dict)

    def validate_params(self, value):
        if not isinstance(value, dict):
            raise serializers.ValidationError("Expected an object of parameters.")
        return value

    def validate(self, attrs):
        # JSON tells 3 from 3.0: an integer parameter, the seed among them, takes an
        # integer, as it refuses "3". (The kinds round whole floats, which stored deck
        # specs may hold; the API is held to its schema.)
        kind = KINDS[attrs["kind"]]
        integers = {name for name, spec in kind.params.items() if spec.type == "int"}
        floats = {
            name: value
            for name, value in attrs.get("params", {}).items()
            if (name in integers or name == "seed") and type(value) is float
        }
        if floats:
            raise serializers.ValidationError(
                {
                    "params": {
                        name: [f"Expected an integer, got {value!r}."]
                        for name, value in floats.items()
                    }
                }
            )
        return attrs


class ExerciseCreateSchema(OpenApiSerializerExtension):
    """One branch per kind, each with its exact parameters, so the schema says what is accepted."""

    target_class = "exercises.serializers.ExerciseCreateSerializer"

    def map_serializer(self, auto_schema, direction):
        branches = [
            {
                "type": "object",
                "title": kind.name,
                "properties": {
                    # A pattern, not a one-value enum: the schema generator merges enums by field name.
                    "kind": {"type": "string", "pattern": f"^{kind.name}$"},
                    "params": kind.params_json_schema(),
                },
                "required": ["kind"],
            }
            for kind in KINDS.values()
        ]
        return {
            "type": "object",
            "required": ["kind"],
            "properties": {
                "kind": {"type": "string", "enum": list(KINDS)},
                "params": {"type": "object", "description": "The kind's parameters."},
            },
            "additionalProperties": False,
            "oneOf": branches,
            "description": "A kind and its parameters; see GET exercises/kinds/.",
        }


class AskSerializer(serializers.Serializer):
    name = serializers.CharField(
        help_text=(
            "The part's API name, the key of its answer. A number in it counts from 0: "
            "`weights_head_0` holds the weights of head 1. (`pe_<pos>` names a position, "
            "not an index.)"
        )
    )
    label = serializers.SerializerMethodField(  # type: ignore[assignment]  # a field named label
        help_text=(
            "The part as the learner reads it, counting from 1 as the prompt, the tables "
            'and the page do: "weights of head 1" for `weights_head_0`; otherwise the name.'
        )
    )
    shape = serializers.ListField(child=serializers.IntegerField(min_value=1), max_length=2)
    exact = serializers.BooleanField(
        required=False,
        help_text="Present and true for a whole number checked exactly (a count, a shape).",
    )
    choices = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text=(
            "Present when the answer is one of these strings. When the first ask has choices "
            "it is a prediction: submit it first, on its own (no attempt used); the numeric "
            "parts open after it."
        ),
    )
    question = serializers.CharField(required=False, help_text="The prediction's question.")

    def get_label(self, obj: Mapping[str, Any]) -> str:
        return part_words(str(obj["name"]))


class PredictionStateSerializer(serializers.Serializer):
    part = serializers.CharField()
    answer = serializers.CharField()
    created_at = serializers.DateTimeField()


class PredictionSummarySerializer(serializers.Serializer):
    part = serializers.CharField()
    question = serializers.CharField()
    answer = serializers.CharField(help_text="The choice predicted.")
    expected = serializers.CharField(help_text="What the numbers say.")
    correct = serializers.BooleanField()
    message = serializers.CharField()


class ToleranceSerializer(serializers.Serializer):
    rtol = serializers.FloatField()
    atol = serializers.FloatField()


class AttemptsSerializer(serializers.Serializer):
    used = serializers.IntegerField()
    max = serializers.IntegerField()
    remaining = serializers.IntegerField()


class WorkedStepSerializer(serializers.Serializer):
    """One step of a worked solution, in the order the work is done."""

    name = serializers.CharField(
        help_text='Stable name: "raw_scores", "scores", "masked", "softmax_row_1" (rows from '
        '1), "weights", "output"; a head\'s steps start "head_1_", an input\'s "input_1_".'
    )
    title = serializers.CharField(help_text="The step as the learner reads it (plain text).")
    shape = serializers.ListField(
        child=serializers.IntegerField(min_value=0), help_text="The shape of `value`."
    )
    value = serializers.JSONField(
        help_text="The step's numbers, from the engine's own intermediates; a blocked score "
        "(minus infinity) is null. A choice is its string."
    )
    note = serializers.CharField(
        allow_blank=True, help_text="How the step is done, with its numbers (plain text)."
    )
    part = serializers.CharField(
        allow_null=True,
        help_text="The asked part this step is, or is a row of (its API name); null for a "
        "step in between that is not asked.",
    )
    first_wrong = serializers.BooleanField(
        help_text="True on the step where the attempt's first wrong part first goes wrong: "
        "the first step of that part holding a wrong cell (a softmax row step for a wrong "
        "row). At most one step is marked."
    )
    shift = serializers.FloatField(
        required=False, help_text="A softmax row: the largest open score, subtracted first."
    )
    exps = serializers.ListField(
        child=serializers.FloatField(),
        required=False,
        help_text="A softmax row: exp(s − shift) per key, 0 for a blocked one.",
    )
    sum = serializers.FloatField(required=False, help_text="A softmax row: the sum of `exps`.")


class WorkedSolutionSerializer(serializers.Serializer):
    """A worked solution: each part's expected answer under its own name (as many keys as
    the exercise has parts), and ``steps``."""

    steps = WorkedStepSerializer(many=True, help_text="The work, in order.")


WORKED_SOLUTION_SCHEMA = WorkedSolutionSerializer(allow_null=True)


class ExerciseSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    params = serializers.DictField(
        help_text=(
            "Normalised parameters, including the seed of a practice exercise. An exercise "
            "handed out by reviews/due/ has a private seed: params carries none."
        )
    )
    prompt = serializers.CharField(help_text="Markdown with $...$ math.")
    inputs = serializers.DictField(
        help_text=(
            "Plain JSON numbers and lists; masks are boolean matrices, true = blocked. An "
            "index among them counts from 0 (the ablation kind's `highlighted` is a row of "
            "`K_m`: 0 is the token the prompt calls token 1); names such as `K_1` count "
            "inputs from 1, as the prompt does."
        )
    )
    asks = AskSerializer(many=True)
    tolerance = serializers.SerializerMethodField()
    attempts = serializers.SerializerMethodField()
    solved = serializers.BooleanField()
    solution = serializers.SerializerMethodField(
        help_text="The worked solution, null until solved or out of attempts: the expected "
        "answer of each part by its name, and `steps`, the work in order (see "
        "`WorkedStep`), the latest attempt's first wrong step marked."
    )
    created_at = serializers.DateTimeField()
    prediction = serializers.SerializerMethodField(
        help_text="The prediction committed to ({part, answer, created_at}); null until made "
        "or when the exercise asks none."
    )

    @extend_schema_field(ToleranceSerializer)
    def get_tolerance(self, obj: Exercise) -> dict[str, float]:
        return {"rtol": obj.rtol, "atol": obj.atol}

    @extend_schema_field(AttemptsSerializer)
    def get_attempts(self, obj: Exercise) -> dict[str, int]:
        return attempts_summary(obj)

    @extend_schema_field(WORKED_SOLUTION_SCHEMA)
    def get_solution(self, obj):
        if not (obj.solved or obj.attempts_used >= obj.max_attempts):
            return None  # hidden: no need to read the attempts (the due page's exercises)
        # ``.all()`` uses the list view's prefetch; attempts are ordered by number.
        attempts = list(obj.attempt_set.all())
        return solution_if_revealed(obj, attempts[-1].result if attempts else None)

    @extend_schema_field(PredictionStateSerializer(allow_null=True))
    def get_prediction(self, obj):
        ask = first_prediction(obj.asks)
        if ask is None:
            return None
        # ``.all()`` uses a prefetch when the list view made one.
        made = next((p for p in obj.predictions.all() if p.ask == ask["name"]), None)
        state = prediction_state(ask, made)
        return None if state is None else PredictionStateSerializer(state).data


@extend_schema_field(ANY_JSON)
class AnswerValueField(serializers.Field):
    """Any parsed JSON value, unchanged: ``exercises.checking`` judges it against the part's
    shape, so that NaN, infinity (1e400 parses to it) and null are reported by part."""

    def __init__(self, **kwargs):
        super().__init__(allow_null=True, **kwargs)

    def validate_empty_values(self, data):
        return (False, data)

    def to_internal_value(self, data):
        return data

    def to_representation(self, value):
        return value


# An exercise asks for at most eight parts; a body of more than this many is refused before
# any part is read.
MAX_ANSWER_PARTS = 100


@extend_schema_field(
    {"type": "object", "additionalProperties": ANY_JSON, "maxProperties": MAX_ANSWER_PARTS}
)
class AnswersField(serializers.DictField):
    def to_internal_value(self, data):
        if isinstance(data, Mapping) and len(data) > MAX_ANSWER_PARTS:
            raise serializers.ValidationError(
                f"Expected at most {MAX_ANSWER_PARTS} parts, got {len(data)}."
            )
        return super().to_internal_value(data)


class SubmitSerializer(serializers.Serializer):
    answers = AnswersField(
        # Everything passes here so that it is reported per part, after the exercise is found.
        child=AnswerValueField(),
        allow_empty=True,
        help_text="Part name -> a number, a list of numbers, or a list of rows.",
    )


class PartResultSerializer(serializers.Serializer):
    correct = serializers.BooleanField()
    wrong_cells = serializers.ListField(
        child=serializers.ListField(child=serializers.IntegerField(), max_length=2),
        help_text=(
            "[row, col] in a matrix, [i] in a vector, counted from 0 (JSON list indices; "
            "the page and the prompts count rows and columns from 1); a wrong number is [[]]."
        ),
    )
    message = serializers.CharField()
    follows = serializers.BooleanField(
        help_text=(
            "True when the part is wrong against the right answer but right given the "
            "learner's own earlier parts (error carried forward): half credit, not correct."
        )
    )
    follows_from = serializers.CharField(
        required=False, help_text='With follows: which earlier parts, e.g. "your scores".'
    )


LESSON_SECTION_HELP = (
    "The key of the lesson section that teaches the point (objective, worked-example, "
    "shapes, masks, multi-head, positions, cost, heat-maps, lab, interview)."
)
LESSON_URL_HELP = (
    "The page of that section (/decks/<slug>/lesson/#<key>): in the deck of the card the "
    "exercise was handed out for, else of a deck whose lesson has the section; null when "
    "no lesson has it."
)


class EitherMistakeSerializer(serializers.Serializer):
    code = serializers.CharField()
    text = serializers.CharField(help_text="What this mistake is and how to do the step.")
    lesson_section = serializers.CharField(help_text=LESSON_SECTION_HELP)
    lesson_url = serializers.CharField(allow_null=True, help_text=LESSON_URL_HELP)


class DiagnosisSerializer(serializers.Serializer):
    code = serializers.CharField(
        help_text="The mistake named; with `either`, the first of those it lists."
    )
    parts = serializers.ListField(
        child=serializers.CharField(),
        help_text="The part where it shows: the first wrong step, by its part name.",
    )
    text = serializers.CharField(
        help_text=(
            "What the learner reads. With `either`: one sentence saying that those mistakes "
            "give the same numbers at this step, so the numbers cannot tell which was made."
        )
    )
    lesson_section = serializers.CharField(help_text=LESSON_SECTION_HELP)
    lesson_url = serializers.CharField(allow_null=True, help_text=LESSON_URL_HELP)
    either = EitherMistakeSerializer(
        many=True,
        required=False,
        help_text=(
            "Present when two or more mistakes give the learner's numbers at this step: "
            "each one, with what it means. A mistake is named only when its own numbers "
            "are the learner's at this step and at every later part it changes by itself."
        ),
    )


class SubmitResultSerializer(serializers.Serializer):
    correct = serializers.BooleanField()
    score = serializers.FloatField(
        help_text=(
            "Mean over parts of each part's credit: the share of its right cells, at least "
            "one half for a part that follows from the learner's own earlier parts."
        )
    )
    parts = serializers.DictField(child=PartResultSerializer())
    diagnosis = DiagnosisSerializer(
        many=True, help_text="Known mistakes that explain the first wrong step (only that step)."
    )
    first_wrong = serializers.CharField(
        allow_null=True,
        help_text="The first part that is neither right nor follows from earlier ones; null when right.",
    )
    hint = serializers.CharField(
        allow_null=True,
        help_text="After a wrong answer, for the first wrong part: what to compute, from "
        "what, and along which axis, never the number (plain text); null when correct.",
    )
    first_wrong_step = serializers.CharField(
        allow_null=True,
        help_text="The name of the worked solution's step where this attempt first goes "
        "wrong (the one marked `first_wrong`); null when correct.",
    )
    attempts = AttemptsSerializer()
    attempt = serializers.IntegerField(help_text="This attempt's number, from 1.")
    solved = serializers.BooleanField()
    solution = serializers.SerializerMethodField(
        help_text="The worked solution (as an exercise's `solution`), this attempt's first "
        "wrong step marked; null until solved or out of attempts."
    )

    @extend_schema_field(WORKED_SOLUTION_SCHEMA)
    def get_solution(self, obj):  # the schema only: results are returned as computed
        return obj.get("solution")

    review = serializers.DictField(
        allow_null=True,
        required=False,
        help_text=(
            "For an exercise handed out by reviews/due/: the review its first submission "
            "recorded ({id, card, result, step, interval_days, due_on}); null otherwise."
        ),
    )
    prediction = PredictionSummarySerializer(
        allow_null=True,
        required=False,
        help_text="The prediction made first, beside what the numbers say; null when none.",
    )


class PredictionResultSerializer(serializers.Serializer):
    """The answer to a submission of the prediction alone: recorded, no attempt used."""

    prediction = PredictionStateSerializer()
    attempts = AttemptsSerializer()
    solved = serializers.BooleanField()
    next = serializers.ListField(
        child=serializers.CharField(), help_text="The parts now open, submitted together."
    )
    review = serializers.DictField(
        allow_null=True, required=False, help_text="Always null: a prediction records no review."
    )


class ParamDescriptionSerializer(serializers.Serializer):
    type = serializers.ChoiceField(choices=["int", "float", "bool", "choice"])
    default = serializers.JSONField()
    help = serializers.CharField()
    min = serializers.FloatField(required=False)
    max = serializers.FloatField(required=False)
    choices = serializers.ListField(child=serializers.JSONField(), required=False)
    multiple_of = serializers.IntegerField(required=False)


class ExerciseKindSerializer(serializers.Serializer):
    kind = serializers.CharField()
    title = serializers.CharField()
    description = serializers.CharField()
    params = serializers.DictField(child=ParamDescriptionSerializer())
    max_attempts = serializers.IntegerField()


# --- Errors (DRF's shapes) -------------------------------------------------------------


class AttemptsExhaustedErrorSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="Why the exercise takes no more answers.")
    solved = serializers.BooleanField()
    attempts = AttemptsSerializer()
    solution = serializers.DictField(allow_null=True)


class PredictionConflictErrorSerializer(serializers.Serializer):
    """409 of a predict-first exercise: the prediction must come first, or was made."""

    detail = serializers.CharField(help_text="What to send instead.")
    answers = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="The part at issue (`prediction`, or a numeric part sent before it) -> messages.",
    )


class PlaygroundRequestSchema(OpenApiSerializerExtension):
    """Exactly one of the two forms: {Q, K, V} or {X, W_Q, W_K, W_V}."""

    target_class = "exercises.serializers.PlaygroundRequestSerializer"

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_basic_serializer(self.target, direction)
        schema["additionalProperties"] = False
        schema["oneOf"] = [
            {"required": list(DIRECT), "not": {"anyOf": [{"required": [n]} for n in PROJECTED]}},
            {"required": list(PROJECTED), "not": {"anyOf": [{"required": [n]} for n in DIRECT]}},
        ]
        return schema


# --- Predictions in the playground ---------------------------------------------------------


class PlaygroundPredictionRequestSerializer(RefusesUnknownFields):
    preset = serializers.ChoiceField(
        choices=list(PRESETS),
        help_text="The lesson preset the prediction is about.",
        error_messages={"invalid_choice": f"Expected one of {', '.join(PRESETS)}; got {{input}}."},
    )
    answer = serializers.CharField(
        max_length=200, trim_whitespace=False, help_text="One of the preset's choices."
    )

    def validate(self, attrs):
        choices = prediction_choices(attrs["preset"])
        if attrs["answer"] not in choices:
            raise serializers.ValidationError(
                {
                    "answer": [
                        f"Expected one of {', '.join(repr(c) for c in choices)} for preset "
                        f"{attrs['preset']!r}; got {attrs['answer']!r}."
                    ]
                }
            )
        return attrs


class PlaygroundQuestionSerializer(serializers.Serializer):
    preset = serializers.CharField()
    question = serializers.CharField()
    choices = serializers.ListField(child=serializers.CharField())


class PlaygroundPredictionSerializer(PlaygroundQuestionSerializer):
    id = serializers.IntegerField()
    answer = serializers.CharField(help_text="The choice predicted.")
    expected = serializers.CharField(help_text="What the preset's weights say.")
    correct = serializers.BooleanField()
    message = serializers.CharField()
    created_at = serializers.DateTimeField()
    weights = serializers.ListField(
        child=serializers.ListField(child=serializers.FloatField()),
        help_text="The preset's weights, revealed with the verdict.",
    )


def _literal(text: str) -> str:
    """``text`` as a regular expression matching itself (ECMA-262 and Python alike)."""
    return "".join("\\" + c if c in ".^$*+?()[]{}|\\/" else c for c in text)


class PlaygroundPredictionRequestSchema(OpenApiSerializerExtension):
    """One branch per preset with exactly its choices, so the schema says what is accepted."""

    target_class = "exercises.serializers.PlaygroundPredictionRequestSerializer"

    def map_serializer(self, auto_schema, direction):
        every_choice = sorted({c for name in PRESETS for c in prediction_choices(name)})
        return {
            "type": "object",
            "required": ["preset", "answer"],
            "additionalProperties": False,
            "properties": {
                "preset": {
                    "type": "string",
                    "enum": list(PRESETS),
                    "description": "The lesson preset the prediction is about.",
                },
                "answer": {
                    "type": "string",
                    "enum": every_choice,
                    "description": "One of that preset's choices (GET lists them).",
                },
            },
            "oneOf": [
                {
                    "title": name,
                    "properties": {
                        # Patterns, not enums: the schema generator merges enums by field name.
                        "preset": {"type": "string", "pattern": f"^{name}$"},
                        "answer": {
                            "type": "string",
                            "pattern": "^("
                            + "|".join(map(_literal, prediction_choices(name)))
                            + ")$",
                        },
                    },
                    "required": ["preset", "answer"],
                }
                for name in PRESETS
            ],
        }
