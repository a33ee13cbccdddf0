"""OpenAPI generation: every operation documents the error statuses it can answer.

DRF answers 400, 401, 403, 404 and 415 from shared machinery (validation,
authentication, permissions, lookups, parsers), so they are added here once
instead of on every view. Views still declare their own domain errors (409, 422).
"""

from drf_spectacular.openapi import AutoSchema as BaseAutoSchema
from rest_framework.permissions import AllowAny

DETAIL_ERROR = {
    "type": "object",
    "properties": {"detail": {"type": "string"}},
    "required": ["detail"],
}
FIELD_ERRORS = {
    "type": "object",
    "description": (
        'Messages per field, e.g. {"timezone": ["Expected an IANA time zone name ..."]}, '
        'or {"detail": "..."} for a body that is not valid JSON. Exercise answer errors '
        'are nested by part: {"answers": {"scores": ["..."]}}.'
    ),
    "additionalProperties": {},
}


def _error(description: str, schema: dict) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


class AutoSchema(BaseAutoSchema):
    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        has_body = self.method in ("POST", "PUT", "PATCH")
        paginated = bool(self._get_pagination_parameters())
        has_params = paginated or bool(self._get_filter_parameters())
        overrides = [p for p in self.get_override_parameters() if not isinstance(p, type)]
        # A page number past the end is DRF's 404 "Invalid page."
        paginated = paginated or any(getattr(p, "name", None) == "page" for p in overrides)
        public = all(isinstance(p, AllowAny) for p in self.view.get_permissions())
        path_has_id = "{" in self.path

        if has_body or has_params or overrides:
            responses.setdefault(
                "400", _error("The request was malformed or invalid.", FIELD_ERRORS)
            )
        if not public:
            responses.setdefault(
                "401", _error("Authentication credentials were missing or wrong.", DETAIL_ERROR)
            )
            responses.setdefault(
                "403", _error("Not allowed for this user (or a missing CSRF token).", DETAIL_ERROR)
            )
        if path_has_id or paginated:
            responses.setdefault("404", _error("Not found (or not yours).", DETAIL_ERROR))
        if has_body:
            responses.setdefault(
                "415", _error("Only application/json request bodies are accepted.", DETAIL_ERROR)
            )
            responses.setdefault(
                "413", _error("The body is larger than the limit (8 MiB).", DETAIL_ERROR)
            )
        if throttled(self.view, self.method):
            responses.setdefault("429", THROTTLED)
        responses.setdefault("503", UNAVAILABLE)
        return responses


THROTTLED = {
    "description": (
        "Too many requests (or, on a log-in, a locked-out username). `Retry-After` gives the "
        "seconds to wait and `detail` says when to try again."
    ),
    "headers": {"Retry-After": {"schema": {"type": "integer"}}},
    "content": {"application/json": {"schema": DETAIL_ERROR}},
}
UNAVAILABLE = {
    "description": (
        "The database is not answering (`Retry-After: 30`), did not answer in time (5), or "
        "was busy with a conflicting change (1); nothing was changed. Retry after "
        "`Retry-After` seconds."
    ),
    "headers": {"Retry-After": {"schema": {"type": "integer"}}},
    "content": {"application/json": {"schema": DETAIL_ERROR}},
}


def throttled(view, method: str) -> bool:
    """Whether a rate limit applies to this operation (every authenticated one has one)."""
    scopes = getattr(view, "throttle_scopes", None) or {}
    if scopes.get(method) or getattr(view, "throttle_scope", None):
        return True
    return not all(isinstance(p, AllowAny) for p in view.get_permissions())
