"""What the exercise API answers is what its schema says: the predict-first 409 and
integer parameters."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

pytestmark = pytest.mark.django_db

EXERCISES = "/api/v1/exercises/"
SUBMIT = "/api/v1/exercises/{id}/submit/"


def _nullable_to_json_schema(node: Any) -> Any:
    """OpenAPI 3.0's ``nullable: true`` as JSON Schema's ``type: [..., "null"]``."""
    if isinstance(node, dict):
        node = {k: _nullable_to_json_schema(v) for k, v in node.items()}
        if node.pop("nullable", False) and "type" in node:
            node["type"] = [node["type"], "null"]
        return node
    if isinstance(node, list):
        return [_nullable_to_json_schema(v) for v in node]
    return node


@pytest.fixture
def schema(anon_api) -> dict:
    response = anon_api.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    return response.json()


def _validator(schema: dict, path: str, method: str, status: str) -> jsonschema.Validator:
    response = schema["paths"][path][method]["responses"][status]
    body = response["content"]["application/json"]["schema"]
    root = _nullable_to_json_schema({**body, "components": schema["components"]})
    return jsonschema.Draft202012Validator(root)


def test_the_predict_first_409_matches_the_documented_409(api, schema):
    conflict = _validator(schema, "/api/v1/exercises/{exercise_id}/submit/", "post", "409")
    ex = api.post(EXERCISES, {"kind": "causal", "params": {"predict": "token_0"}}, format="json")
    assert ex.status_code == 201, ex.content
    url = SUBMIT.format(id=ex.json()["id"])

    numbers_first = api.post(url, {"answers": {"weights": [[1.0]]}}, format="json")
    assert numbers_first.status_code == 409
    assert set(numbers_first.json()) == {"detail", "answers"}
    conflict.validate(numbers_first.json())

    assert (
        api.post(url, {"answers": {"prediction": "only itself"}}, format="json").status_code == 200
    )
    twice = api.post(url, {"answers": {"prediction": "only itself"}}, format="json")
    assert twice.status_code == 409
    conflict.validate(twice.json())
    assert "prediction" in twice.json()["answers"]

    # The other 409, a closed exercise, still matches too.
    closed = {"detail": "Solved.", "solved": True, "attempts": {}, "solution": None}
    with pytest.raises(jsonschema.ValidationError):
        conflict.validate({**closed, "attempts": "three"})
    conflict.validate({**closed, "attempts": {"used": 1, "max": 3, "remaining": 2}})


def test_integer_parameters_refuse_whole_floats_as_they_refuse_strings(api, schema):
    for params, field, given in [
        ({"n": 3.0}, "n", "3.0"),
        ({"seed": 5.0}, "seed", "5.0"),
        ({"n": "3"}, "n", "'3'"),
    ]:
        response = api.post(EXERCISES, {"kind": "attention", "params": params}, format="json")
        assert response.status_code == 400, response.content
        assert response.json() == {"params": {field: [f"Expected an integer, got {given}."]}}
    # Integers are still integers, as the schema says.
    response = api.post(
        EXERCISES, {"kind": "attention", "params": {"n": 3, "seed": 5}}, format="json"
    )
    assert response.status_code == 201, response.content
    assert response.json()["params"]["n"] == 3
    create = schema["paths"][EXERCISES]["post"]["requestBody"]["content"]["application/json"]
    body = create["schema"]
    if "$ref" in body:
        body = schema["components"]["schemas"][body["$ref"].rsplit("/", 1)[1]]
    attention = next(b for b in body["oneOf"] if b["title"] == "attention")
    assert attention["properties"]["params"]["properties"]["n"]["type"] == "integer"
