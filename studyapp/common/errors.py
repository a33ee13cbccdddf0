"""One error shape for the whole API: DRF's ``{"field": [..]}`` or ``{"detail": ..}``."""

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DataError
from rest_framework import exceptions
from rest_framework.views import exception_handler as drf_exception_handler


def exception_handler(exc, context):
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(
            exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
        )
    elif isinstance(exc, DataError):
        # e.g. an integer beyond the column's range, or a NUL in text (PostgreSQL).
        if "NUL" in str(exc) or "0x00" in str(exc):
            message = "Text may not contain the NUL character (\\u0000)."
        else:
            message = "A value is out of range for its field."
        exc = exceptions.ParseError(message)
    return drf_exception_handler(exc, context)
