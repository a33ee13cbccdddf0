"""Serializer fields that take JSON types at their word.

DRF coerces ``"5"`` to 5 and ``"yes"`` to True; an API that advertises an
integer or a boolean should refuse a string instead, and say what it expected.
"""

from rest_framework import serializers


def _type_name(value) -> str:
    return "null" if value is None else type(value).__name__.replace("str", "string")


class StrictIntegerField(serializers.IntegerField):
    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            raise serializers.ValidationError(f"Expected an integer, got {_type_name(data)}.")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    def to_internal_value(self, data):
        if not isinstance(data, bool):
            raise serializers.ValidationError(f"Expected true or false, got {_type_name(data)}.")
        return data


class StrictCharField(serializers.CharField):
    def to_internal_value(self, data):
        if not isinstance(data, str):
            raise serializers.ValidationError(f"Expected a string, got {_type_name(data)}.")
        try:
            data.encode("utf-8")
        except UnicodeEncodeError as exc:  # lone surrogates cannot be stored
            raise serializers.ValidationError("Expected valid Unicode text.") from exc
        return super().to_internal_value(data)


class StrictChoiceField(serializers.ChoiceField):
    def __init__(self, *args, expected_description: str = "one of the listed values", **kwargs):
        self.expected_description = expected_description
        super().__init__(*args, **kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, str):
            raise serializers.ValidationError(f"Expected a string, got {_type_name(data)}.")
        if data not in self.choices:
            if len(self.choices) > 12:  # e.g. time zones: name the kind of value, not all of them
                raise serializers.ValidationError(
                    f"Expected {self.expected_description}; got {data!r}."
                )
            expected = ", ".join(map(str, self.choices))
            raise serializers.ValidationError(f"Expected one of {expected}; got {data!r}.")
        return data
