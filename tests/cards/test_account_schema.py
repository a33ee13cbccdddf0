"""The OpenAPI schema of the account endpoints says what their requests carry."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def _schema(client) -> dict:
    response = client.get("/api/schema/?format=json")
    assert response.status_code == 200
    return response.json()


def test_delete_me_declares_its_password_body(client, api):
    schema = _schema(client)
    delete = schema["paths"]["/api/v1/me/"]["delete"]
    body = delete["requestBody"]
    assert body["required"] is True
    ref = body["content"]["application/json"]["schema"]["$ref"]
    component = schema["components"]["schemas"][ref.rsplit("/", 1)[-1]]
    assert component["properties"]["password"]["type"] == "string"
    assert component["required"] == ["password"]
    # The statuses it answers: the wrong or missing password, and a locked username.
    assert {"204", "400", "429"} <= set(delete["responses"])
    assert (
        "password"
        in delete["responses"]["400"]["content"]["application/json"]["schema"]["properties"]
    )
    # And the answer matches: the schema's body is what the endpoint needs.
    assert api.delete("/api/v1/me/", {}, format="json").status_code == 400


def test_password_checks_say_they_count_toward_the_lockout(client):
    paths = _schema(client)["paths"]
    for path, method in [
        ("/api/v1/me/", "delete"),
        ("/api/v1/me/", "patch"),
        ("/api/v1/me/password/", "post"),
    ]:
        operation = paths[path][method]
        assert "lockout" in operation["description"], (path, method)
        assert "429" in operation["responses"], (path, method)
