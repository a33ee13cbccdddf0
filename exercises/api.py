"""The exercise API and the attention playground: parse, call one service, selector or
the playground's computation, serialize."""

from __future__ import annotations

from typing import Any, cast

from django.conf import settings
from django.utils import timezone
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
)
from rest_framework import status
from rest_framework.exceptions import NotFound, Throttled, ValidationError
from rest_framework.generics import GenericAPIView
from rest_framework.parsers import JSONParser
from rest_framework.response import Response
from rest_framework.views import APIView

from exercises import selectors, services
from exercises.checking import AnswerError
from exercises.kinds import ParamError, UnknownKindError
from exercises.models import Exercise
from exercises.playground import PlaygroundError, attention_playground, playground_cost
from exercises.predictions import prediction_summary
from exercises.presets import PRESETS, preset_question
from exercises.serializers import (
    AttemptsExhaustedErrorSerializer,
    ExerciseCreateSerializer,
    ExerciseKindSerializer,
    ExerciseSerializer,
    PlaygroundPredictionRequestSerializer,
    PlaygroundPredictionSerializer,
    PlaygroundQuestionSerializer,
    PlaygroundRequestSerializer,
    PlaygroundResponseSerializer,
    PredictionConflictErrorSerializer,
    PredictionResultSerializer,
    SubmitResultSerializer,
    SubmitSerializer,
)
from studyapp.common.budget import CostBudget, one_at_a_time, retry_after
from studyapp.common.ids import parse_id


class NonFiniteJSONParser(JSONParser):
    """JSON that also reads the NaN and Infinity literals Python's json.dumps writes by
    default, so the field that holds one is named in the 400 instead of a parse error.
    Every number is then checked to be finite where it is used."""

    strict = False


ID_PARAM = OpenApiParameter(
    "exercise_id", int, OpenApiParameter.PATH, description="The exercise's id."
)


def exercise_pk(raw: str | int) -> int:
    """The path's id as an int; one no row can have is a 404 (the database would overflow)."""
    pk = parse_id(raw)
    if pk is None:
        raise NotFound()
    return pk


class ExerciseKindListView(GenericAPIView):
    """The exercise kinds and their parameters, paginated like every list."""

    serializer_class = ExerciseKindSerializer

    @extend_schema(
        operation_id="exercises_kinds_list",
        summary="Exercise kinds",
        description=(
            "Every kind with its parameters: each maps to {type, default, help} plus min, max "
            "or choices where they apply. Paginated like every list (all kinds fit one page)."
        ),
        responses={
            200: ExerciseKindSerializer(many=True),
        },
    )
    def get(self, request):
        page = self.paginate_queryset(selectors.exercise_kinds())
        return self.get_paginated_response(page)


class ExerciseListCreateView(GenericAPIView):
    serializer_class = ExerciseSerializer
    parser_classes = [JSONParser]
    throttle_scopes = {"POST": "exercise_create"}

    def get_queryset(self):
        return selectors.exercises_for_owner(owner=self.request.user)

    @extend_schema(
        operation_id="exercises_list",
        summary="My exercises, newest first",
        responses={
            200: ExerciseSerializer(many=True),
        },
    )
    def get(self, request):
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(ExerciseSerializer(page, many=True).data)

    @extend_schema(
        operation_id="exercises_create",
        summary="Generate an exercise",
        description=(
            "Generates a fresh variant of `kind`. Same kind, params and params.seed give the "
            "same inputs; without a seed the server picks one (stored in params.seed)."
        ),
        request=ExerciseCreateSerializer,
        responses={201: ExerciseSerializer},
    )
    def post(self, request):
        body = ExerciseCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            exercise = services.exercise_create(
                owner=request.user,
                kind=body.validated_data["kind"],
                params=body.validated_data["params"],
            )
        except UnknownKindError as exc:
            raise ValidationError({"kind": [exc.message]}) from None
        except ParamError as exc:
            if exc.field == "params":  # about the parameters together, not one of them
                raise ValidationError({"params": [exc.message]}) from None
            raise ValidationError({"params": {exc.field: [exc.message]}}) from None
        return Response(ExerciseSerializer(exercise).data, status=status.HTTP_201_CREATED)


class ExerciseDetailView(APIView):
    @extend_schema(
        operation_id="exercises_retrieve",
        summary="One of my exercises",
        parameters=[ID_PARAM],
        responses={200: ExerciseSerializer},
    )
    def get(self, request, exercise_id: int):
        try:
            exercise = selectors.exercise_for_owner(
                owner=request.user, exercise_id=exercise_pk(exercise_id)
            )
        except Exercise.DoesNotExist:
            raise NotFound() from None
        return Response(ExerciseSerializer(exercise).data)


class ExerciseSubmitView(APIView):
    """Submit answers. Subclasses may override ``attempt`` to add to what a submission does:
    the study core routes ``exercises/{id}/submit/`` to its subclass, which also records a
    review (``exercises.reviews`` says what else the study core provides)."""

    parser_classes = [NonFiniteJSONParser]
    throttle_scope = "exercise_submit"

    @extend_schema(
        operation_id="exercises_submit",
        summary="Submit answers",
        parameters=[ID_PARAM],
        description=(
            "Checks every part; a cell is right when |given - expected| <= atol + rtol |expected| "
            "(an ask marked `exact` must be that whole number). Each part after the first is "
            "also checked against what follows from the learner's own earlier parts: right "
            "earlier parts carry their rounding, and a part right only given wrong earlier "
            "parts is marked `follows: true` with half credit. The diagnosis names the first "
            "wrong step only (`first_wrong`). Each well-formed submission uses one attempt. "
            "Malformed answers (NaN, infinity, strings, booleans, a wrong shape, an unknown or "
            "missing part) are 400 and use no attempt. A solved exercise, or one with every "
            "attempt used, takes no more answers: 409. The solution is null until the "
            "exercise is solved or out of attempts.\n\n"
            "Predict first: when the exercise's first ask has `choices`, submit that part "
            "alone first (`{answers: {prediction: <one of the choices>}}`): it is recorded "
            "once, uses no attempt and records no review, and the answer is a prediction "
            "result. Numeric parts before it, or a second prediction, are 409; a value not "
            "among the choices is 400 naming the part and the choices. Later results carry "
            "`prediction`: the choice beside what the numbers say."
        ),
        request=SubmitSerializer,
        responses={
            200: PolymorphicProxySerializer(
                component_name="SubmitOrPredictionResult",
                serializers=[SubmitResultSerializer, PredictionResultSerializer],
                resource_type_field_name=None,
            ),
            409: OpenApiResponse(
                PolymorphicProxySerializer(
                    component_name="SubmitConflict",
                    serializers=[
                        AttemptsExhaustedErrorSerializer,
                        PredictionConflictErrorSerializer,
                    ],
                    resource_type_field_name=None,
                ),
                description=(
                    "The exercise is solved, or every attempt is used "
                    "({detail, solved, attempts, solution}); or the prediction must come first, "
                    "or it was already made ({detail, answers: {part: [message]}})."
                ),
            ),
        },
    )
    def post(self, request, exercise_id: int):
        body = SubmitSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        pk = exercise_pk(exercise_id)
        return Response(self.submit(request, pk, body.validated_data["answers"]))

    def submit(self, request, exercise_id: int, answers: dict) -> dict[str, Any]:
        """Record one attempt and return the result; errors become 400, 404 or 409."""
        try:
            outcome = self.attempt(request, exercise_id, answers)
        except Exercise.DoesNotExist:
            raise NotFound() from None
        except (services.PredictionRequired, services.PredictionAlreadyMade) as exc:
            raise PredictionConflict(exc) from None
        except AnswerError as exc:
            raise ValidationError(
                {"answers": {part: [msg] for part, msg in exc.errors.items()}}
            ) from None
        except services.ExerciseClosed as exc:
            raise ExerciseClosedConflict(exc) from None
        return outcome.result

    def attempt(self, request, exercise_id: int, answers: dict) -> services.SubmitOutcome:
        """The write behind a submission; a layer above may compose more into it."""
        return services.attempt_submit(
            owner=request.user, exercise_id=exercise_id, answers=answers, at=timezone.now()
        )


class PredictionConflict(ValidationError):
    """409: the numeric parts came before the prediction, or a second prediction came."""

    status_code = status.HTTP_409_CONFLICT

    def __init__(self, exc: services.PredictionRequired | services.PredictionAlreadyMade):
        super().__init__()
        # A body of plain JSON, rendered as given (the stubs type ``detail`` as DRF's own).
        self.detail = cast(
            Any, {"detail": exc.message, "answers": {p: [m] for p, m in exc.errors.items()}}
        )


class ExerciseClosedConflict(ValidationError):
    status_code = status.HTTP_409_CONFLICT

    def __init__(self, closed: services.ExerciseClosed):
        super().__init__()
        exercise = closed.exercise
        body = {
            "detail": str(closed),
            "solved": exercise.solved,
            "attempts": services.attempts_summary(exercise),
            "solution": services.solution_if_revealed(exercise, services.latest_result(exercise)),
        }
        self.detail = cast(Any, body)  # plain JSON, as PredictionConflict's


class AttentionPlaygroundView(APIView):
    """The playground, budgeted per learner by what a request costs (``playground_cost``):
    one computation at a time (a second is a 409), and a budget of cost units
    (``playground_cost``) beside the count of requests (``playground``). The body's parse
    is charged before it is read, the head's work before it is done; a refused request
    costs nothing more (429 with ``Retry-After``). The service's slots are taken before
    the body is read (``studyapp.request_bounds.playground_slot``)."""

    parser_classes = [NonFiniteJSONParser]
    throttle_scope = "playground"

    @extend_schema(
        operation_id="attention_playground",
        summary="Every intermediate of one attention head",
        description=(
            'Give either {Q, K, V} or {X, W_Q, W_K, W_V}, optionally `mask` ("none", '
            '"causal" or a boolean matrix, true = blocked) and `scale` (default true). '
            "`scores` are before masking; `weights` after. At most 256 rows and 256 columns "
            "per matrix, entries from -1e6 to 1e6. Inconsistent shapes, a row with every key "
            "blocked, a non-number, or an empty or ragged matrix are 400. One computation "
            "at a time per learner (a second at once is 409 with `Retry-After`); besides "
            "the count of requests, a budget counted in cost (the numbers answered and the "
            "multiply-adds, n_q·n_k·(d_k + d_v)) per learner: past it, 429 with "
            "`Retry-After`."
        ),
        request=PlaygroundRequestSerializer,
        responses={
            200: PlaygroundResponseSerializer,
            409: OpenApiResponse(description="Another playground computation of yours runs."),
        },
    )
    def post(self, request):
        with one_at_a_time(f"playground:turn:{request.user.pk}") as mine:
            if not mine:
                return _busy(
                    "Another playground computation of yours is running; send this one "
                    "when it has answered.",
                    status.HTTP_409_CONFLICT,
                )
            shape = getattr(request, "json_shape", None)
            self._charge(request, elements=shape.elements if shape else 0, matrices={})
            return self._compute(request)

    def _compute(self, request):
        body = PlaygroundRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        self._charge(request, elements=0, matrices=body.validated_data)
        try:
            result = attention_playground(**body.validated_data)
        except PlaygroundError as exc:
            raise ValidationError(exc.errors) from None
        return Response(result)

    @staticmethod
    def _charge(request, *, elements: int, matrices) -> None:
        budget = CostBudget.from_rate(
            "playground", settings.STUDY_THROTTLE_RATES.get("playground_cost")
        )
        if budget is None:
            return
        cost = playground_cost(matrices, elements=elements)
        wait = budget.charge(request.user.pk, cost)
        if wait is not None:
            seconds = retry_after(wait)
            raise Throttled(
                wait=seconds,
                detail=(
                    f"This request costs {cost:,} units of the playground's budget "
                    f"({budget.capacity:,} per learner every {budget.period} s), more than "
                    "is left; send smaller matrices, or wait."
                ),
            )


def _busy(detail: str, code: int) -> Response:
    response = Response({"detail": detail}, status=code)
    response["Retry-After"] = "1"
    return response


class PlaygroundPredictionView(APIView):
    parser_classes = [JSONParser]

    @extend_schema(
        operation_id="attention_predictions_questions",
        summary="The playground presets' prediction questions",
        responses={200: PlaygroundQuestionSerializer(many=True)},
    )
    def get(self, request):
        return Response([preset_question(name) for name in PRESETS])

    @extend_schema(
        operation_id="attention_predictions_create",
        summary="Commit to a prediction about a playground preset",
        description=(
            "Predict first: pick a lesson preset (GET lists each question and its choices), "
            "commit to one choice, and get the preset's weights with the prediction marked "
            "right or wrong. Stored; counted in stats/ `predictions_30d`. An unknown preset "
            "or an answer not among the preset's choices is 400 naming the field."
        ),
        request=PlaygroundPredictionRequestSerializer,
        responses={201: PlaygroundPredictionSerializer},
    )
    def post(self, request):
        body = PlaygroundPredictionRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        preset, answer = body.validated_data["preset"], body.validated_data["answer"]
        try:
            made, result = services.playground_prediction_record(
                owner=request.user, preset=preset, answer=answer, at=timezone.now()
            )
        except PlaygroundError as exc:
            raise ValidationError(exc.errors) from None
        summary = prediction_summary({"name": preset}, made.answer, made.expected, made.correct)
        data = {
            **preset_question(preset),
            "id": made.pk,
            "answer": made.answer,
            "expected": made.expected,
            "correct": made.correct,
            "message": summary["message"],
            "created_at": made.created_at,
            "weights": result["weights"],
        }
        return Response(PlaygroundPredictionSerializer(data).data, status=status.HTTP_201_CREATED)
