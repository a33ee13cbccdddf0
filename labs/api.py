"""The lab API: parse, call one service or selector, serialize."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers, status
from rest_framework.exceptions import APIException, NotFound, ValidationError
from rest_framework.generics import GenericAPIView
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from studyapp.common.ids import parse_id

from . import availability, selectors, services
from .models import Submission
from .serializers import (
    LabSerializer,
    SubmissionCreateSerializer,
    SubmissionQueuedSerializer,
    SubmissionSerializer,
)
from .spec import Lab

SLUG_PARAM = OpenApiParameter("slug", str, OpenApiParameter.PATH, description="The lab's slug.")
ID_PARAM = OpenApiParameter(
    "submission_id", int, OpenApiParameter.PATH, description="The submission's id."
)
RETRY_AFTER = OpenApiParameter(
    "Retry-After",
    int,
    OpenApiParameter.HEADER,
    response=[409, 503],
    description="Seconds to wait before submitting again.",
)
UNAVAILABLE = OpenApiResponse(
    inline_serializer("LabsUnavailable", {"detail": serializers.CharField()}),
    description=(
        "No sandbox can run lab code now; `detail` says why, and `Retry-After` when to "
        "try again. Nothing was saved."
    ),
)
PENDING = OpenApiResponse(
    inline_serializer(
        "LabSubmissionPending",
        {
            "detail": serializers.CharField(),
            "submission": serializers.IntegerField(),
            "status": serializers.ChoiceField(choices=["queued", "running"]),
        },
    ),
    description=(
        "The learner already has a submission queued or running (of any lab): one at a "
        "time. `submission` is its id, to poll; `Retry-After` says when its result should "
        "be in. Nothing was saved."
    ),
)


class Unavailable(APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_code = "labs_unavailable"

    def __init__(self, detail: str, wait: int | None = None):
        super().__init__(detail)
        # DRF's handler sends it as Retry-After: by then a labs worker has reported again.
        self.wait = wait if wait is not None else availability.retry_after_seconds()


def _pending(pending: services.SubmissionPending) -> Response:
    submission = pending.submission
    body = {
        "detail": (
            f"Your submission {submission.pk} of {submission.lab!r} is still "
            f"{submission.status}: one submission is graded at a time. Wait for its "
            "result, then submit again."
        ),
        "submission": submission.pk,
        "status": submission.status,
    }
    return Response(
        body, status=status.HTTP_409_CONFLICT, headers={"Retry-After": str(pending.retry_after)}
    )


def _lab(slug: str) -> Lab:
    try:
        return selectors.lab_get(slug)
    except selectors.LabNotFound:
        raise NotFound(f"No lab is called {slug!r}.") from None


class LabListView(GenericAPIView):
    serializer_class = LabSerializer

    @extend_schema(
        operation_id="labs_list",
        summary="The labs",
        description="Every lab in order, paginated like every list (all labs fit one page).",
        responses={200: LabSerializer(many=True)},
    )
    def get(self, request: Request) -> Response:
        labs: Any = selectors.labs_list()  # a list paginates as a queryset does
        page = self.paginate_queryset(labs)
        return self.get_paginated_response(LabSerializer(page, many=True).data)


class LabDetailView(APIView):
    @extend_schema(
        operation_id="labs_retrieve",
        summary="One lab",
        parameters=[SLUG_PARAM],
        responses={200: LabSerializer},
    )
    def get(self, request: Request, slug: str) -> Response:
        return Response(LabSerializer(_lab(slug)).data)


class LabSubmissionsView(GenericAPIView):
    serializer_class = SubmissionSerializer
    parser_classes = [JSONParser]
    throttle_scopes = {"POST": "lab_submit"}

    @extend_schema(
        operation_id="labs_submissions_list",
        summary="My submissions of a lab, newest first",
        parameters=[SLUG_PARAM],
        responses={200: SubmissionSerializer(many=True)},
    )
    def get(self, request: Request, slug: str) -> Response:
        lab = _lab(slug)
        page = self.paginate_queryset(
            selectors.submissions_of(learner=request.user, lab_slug=lab.slug)
        )
        return self.get_paginated_response(SubmissionSerializer(page, many=True).data)

    @extend_schema(
        operation_id="labs_submissions_create",
        summary="Submit code to a lab",
        description=(
            "Queues the code for grading in the sandbox and answers at once (202); poll "
            "`labs/submissions/{id}/` until `status` is `done` or `failed`. The lab makes "
            "fresh inputs for every submission. The first submission of a lab on a study "
            "day while its lab card is due records that card's review, `pass` exactly "
            "when `passed`. An unknown lab is 404; code that is not a non-empty string of "
            "UTF-8 of at most 65,536 bytes is 400 naming `code`; a learner with a "
            "submission still queued or running is 409 (one at a time, with its id and "
            "`Retry-After`); no sandbox here is 503 with the reason and `Retry-After`. "
            "A broker that does not take the grading is no error: the submission is saved "
            "as `queued` (202) and sent again within a minute or two. Rate limited by "
            "`STUDY_THROTTLE_LAB_SUBMIT`."
        ),
        parameters=[SLUG_PARAM, RETRY_AFTER],
        request=SubmissionCreateSerializer,
        responses={202: SubmissionQueuedSerializer, 409: PENDING, 503: UNAVAILABLE},
    )
    def post(self, request: Request, slug: str) -> Response:
        lab = _lab(slug)
        body = SubmissionCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            submission = services.submission_create(
                learner=request.user, lab_slug=lab.slug, code=body.validated_data["code"]
            )
        except services.CodeInvalid as exc:
            raise ValidationError({"code": [str(exc)]}) from None
        except services.LabsUnavailable as exc:
            raise Unavailable(f"Labs cannot run now: {exc.reason}") from None
        except services.SubmissionPending as exc:
            return _pending(exc)
        data: Any = SubmissionQueuedSerializer(submission).data
        return Response(data, status=status.HTTP_202_ACCEPTED)


class SubmissionDetailView(APIView):
    @extend_schema(
        operation_id="labs_submissions_retrieve",
        summary="One of my submissions",
        description="Another learner's submission is 404.",
        parameters=[ID_PARAM],
        responses={200: SubmissionSerializer},
    )
    def get(self, request: Request, submission_id: str) -> Response:
        pk = parse_id(submission_id)
        if pk is None:
            raise NotFound()
        try:
            submission = selectors.submission_for(learner=request.user, submission_id=pk)
        except Submission.DoesNotExist:
            raise NotFound() from None
        return Response(SubmissionSerializer(submission).data)
