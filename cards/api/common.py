"""Parts every resource of the study API shares: error documentation and query parsing."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse
from rest_framework.exceptions import ValidationError

DETAIL = OpenApiResponse(
    response={"type": "object", "properties": {"detail": {"type": "string"}}},
    description="An error with a message.",
)
CONFLICT = OpenApiResponse(DETAIL.response, description="Refused, with the reason.")
NOT_SCHEDULED = OpenApiResponse(DETAIL.response, description="No such card on your ladder.")
NOT_SCHEDULED_DETAIL = "No such card on your ladder (unknown, inactive, or deck not enrolled)."


def int_param(request, name: str) -> int | None:
    """The query parameter ``name`` as an integer, None when absent; anything else is a 400."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        raise ValidationError({name: [f"Expected an integer id, got {raw!r}."]}) from None
