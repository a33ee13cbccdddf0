"""OpenAPI generation: every operation documents the error statuses it can answer, and
request bodies say what the server refuses.

DRF answers 400, 401, 403, 404 and 415 from shared machinery (validation,
authentication, permissions, lookups, parsers), so they are added here once
instead of on every view. Views still declare their own domain errors (409, 422).

A request body whose serializer refuses fields it does not know (a 400 naming each)
declares ``additionalProperties: false`` (``refuses_unknown_fields``); any other body
still lets them through, ignored. A string field that refuses the NUL character (DRF's
``CharField`` does, as PostgreSQL cannot store it; so does a lab's code) carries the
pattern ``NUL_PATTERN``; a field with a format, a pattern or an enum of its own already
excludes it. ``tests/test_schema_strictness.py`` holds both to what the server answers.

``studyapp.schema_view`` serves the schema, built once per process.
"""

from django.core.validators import ProhibitNullCharactersValidator
from drf_spectacular.openapi import AutoSchema as BaseAutoSchema
from rest_framework import serializers
from rest_framework.permissions import AllowAny

# Any text without U+0000; a JSON Schema pattern is ECMA-262, where this is the same.
NUL_PATTERN = "^[^\\u0000]*$"
NUL_NOTE = "No NUL characters (U+0000)."

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


def refuses_unknown_fields(serializer) -> bool:
    """Whether the serializer answers a field it does not know with a 400: the exercises'
    ``RefusesUnknownFields`` and a lab submission's serializer, or any serializer that
    says so with ``refuses_unknown_fields = True``."""
    from exercises.serializers import RefusesUnknownFields
    from labs.serializers import SubmissionCreateSerializer

    strict = (RefusesUnknownFields, SubmissionCreateSerializer)
    return isinstance(serializer, strict) or getattr(serializer, "refuses_unknown_fields", False)


def refuses_nul(field) -> bool:
    """Whether a request field answers a string holding U+0000 with a 400."""
    from labs.serializers import CodeField

    if isinstance(field, CodeField):  # labs.services.code_problem
        return True
    if isinstance(field, serializers.SlugRelatedField):  # no slug holds one
        return True
    return any(isinstance(v, ProhibitNullCharactersValidator) for v in field.validators)


def say_no_nul(schema: dict) -> None:
    """Add the NUL pattern to a plain string's schema (a format, pattern or enum of its
    own already keeps NUL out)."""
    if schema.get("type") != "string" or {"format", "pattern", "enum"} & set(schema):
        return
    schema["pattern"] = NUL_PATTERN
    description = schema.get("description", "")
    schema["description"] = f"{description} {NUL_NOTE}".strip()


class AutoSchema(BaseAutoSchema):
    def _map_basic_serializer(self, serializer, direction):
        schema = super()._map_basic_serializer(serializer, direction)
        if direction != "request":
            return schema
        properties = schema.get("properties", {})
        for name, field in serializer.fields.items():
            if name in properties and refuses_nul(field):
                say_no_nul(properties[name])
        if refuses_unknown_fields(serializer):
            schema["additionalProperties"] = False
        return schema

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
                "415",
                _error(
                    "Only application/json request bodies are accepted, in utf-8 (the "
                    "default), utf-16, utf-32, us-ascii or iso-8859-1; `detail` names a "
                    "refused media type or charset.",
                    DETAIL_ERROR,
                ),
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
