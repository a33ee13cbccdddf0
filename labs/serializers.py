"""What the lab API reads and writes."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

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


class SubmissionCreateSerializer(serializers.Serializer):
    code = serializers.JSONField(
        help_text="Python source, UTF-8, at most 64 KiB (65,536 bytes), not empty."
    )

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
    message = serializers.CharField(help_text="What was expected and what came back.")


class SubmissionSerializer(serializers.ModelSerializer):
    passed = serializers.BooleanField(
        allow_null=True, help_text="True exactly when every test passed; null until done."
    )
    tests = TestResultSerializer(many=True)
    diagnosis = serializers.CharField(
        help_text=(
            "For a done submission, the mistake its results look like (or empty); for a "
            "failed one, why the sandbox could not run it."
        )
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
            "output",
            "duration_ms",
            "created_at",
        ]
        read_only_fields = fields
