"""What the lab API reads and writes."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from . import results
from .models import Submission
from .services import code_problem
from .spec import Lab


class LabSerializer(serializers.Serializer):
    slug = serializers.SlugField(read_only=True)
    title = serializers.CharField(read_only=True)
    prompt = serializers.CharField(read_only=True, help_text="Markdown with $...$ math.")
    starter_code = serializers.CharField(read_only=True, help_text="Python source to start from.")
    tests = serializers.ListField(
        child=serializers.CharField(),
        read_only=True,
        help_text="The names of the lab's tests, in the order results report them.",
    )

    def to_representation(self, instance: Lab) -> dict[str, Any]:
        return {
            "slug": instance.slug,
            "title": instance.title,
            "prompt": instance.prompt,
            "starter_code": instance.starter_code,
            "tests": list(instance.tests),
        }


@extend_schema_field({"type": "string", "minLength": 1, "maxLength": 65536})
class CodeField(serializers.JSONField):
    """The code as sent, whatever its JSON type: ``validate_code`` says what is wrong."""


class SubmissionCreateSerializer(serializers.Serializer):
    code = CodeField(help_text="Python source, UTF-8, at most 64 KiB (65,536 bytes), not empty.")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(self.initial_data) - set(self.fields), key=str)
        if unknown:
            raise serializers.ValidationError(
                {str(name): ["Unknown field; a submission has only code."] for name in unknown}
            )
        return attrs

    def validate_code(self, value: Any) -> str:
        problem = code_problem(value)
        if problem is not None:
            raise serializers.ValidationError(problem)
        return str(value)


class SubmissionQueuedSerializer(serializers.ModelSerializer):
    class Meta:
        model = Submission
        fields = ["id", "lab", "status", "created_at"]
        read_only_fields = fields


class TestResultSerializer(serializers.Serializer):
    name = serializers.CharField()
    passed = serializers.BooleanField()
    message = serializers.CharField(
        help_text='A sentence: what was expected and what came back ("Passed." on a pass).'
    )
    expected = serializers.CharField(
        help_text="After a failure, what was expected: a small array whole, a large one "
        "by its shape, dtype and first entries; empty on a pass."
    )
    got = serializers.CharField(help_text="After a failure, what came back, shown the same way.")
    input = serializers.CharField(help_text="After a failure, the input of the call that failed.")
    hint = serializers.CharField(
        help_text="After a failure, what to compute, from what, over which axis (never the answer)."
    )
    mistake = serializers.CharField(
        allow_null=True,
        help_text="The registered mistake this test's values look like, as a code for "
        "machines (never shown to learners), or null.",
    )


class SubmissionSerializer(serializers.ModelSerializer):
    passed = serializers.BooleanField(
        allow_null=True, help_text="True exactly when every test passed; null until done."
    )
    tests = serializers.SerializerMethodField()
    diagnosis = serializers.SerializerMethodField(
        help_text=(
            "For a done submission, what the mistake its results look like means, in "
            "words (or empty); for a failed one, why the sandbox could not run it."
        )
    )
    mistake = serializers.SerializerMethodField(
        help_text="The registered mistake's code, for machines (the words are in diagnosis), or null."
    )
    output = serializers.CharField(help_text="What the code printed (stdout and stderr), capped.")
    duration_ms = serializers.IntegerField(allow_null=True)

    class Meta:
        model = Submission
        fields = [
            "id",
            "lab",
            "status",
            "passed",
            "tests",
            "diagnosis",
            "mistake",
            "output",
            "duration_ms",
            "created_at",
        ]
        read_only_fields = fields

    @extend_schema_field(TestResultSerializer(many=True))
    def get_tests(self, obj: Submission) -> list[dict[str, Any]]:
        return results.tests(obj)

    @extend_schema_field({"type": "string"})
    def get_diagnosis(self, obj: Submission) -> str:
        return results.diagnosis(obj)

    @extend_schema_field({"type": "string", "nullable": True})
    def get_mistake(self, obj: Submission) -> str | None:
        return results.mistake(obj)
