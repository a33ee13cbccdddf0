"""Request charsets: the ones a body may be in are read (once, by the parser), any other
is a 415 naming it before a byte is decoded, on the API and on the pages."""

from __future__ import annotations

import codecs
import encodings.punycode
import json
from urllib.parse import urlencode
from wsgiref.util import setup_testing_defaults

import numpy as np
import pytest
from django.test import Client
from rest_framework.authtoken.models import Token

from cards.models import LearnerProfile
from studyapp import middleware
from studyapp.common import charsets
from studyapp.common.jsonscan import Shape, json_depth

TOKEN = "/api/v1/auth/token/"
PASSWORD = "pässwörd-€-𝄞-123"  # Latin-1, the BMP beyond it, and an astral character

# (label in the Content-Type, codec that writes the body, byte order mark written first)
ACCEPTED = [
    ("utf-8", "utf-8", b""),
    ("UTF8", "utf-8", b""),
    ("utf-8", "utf-8", codecs.BOM_UTF8),
    ("utf-8-sig", "utf-8", codecs.BOM_UTF8),
    ("utf-16", "utf-16-le", codecs.BOM_UTF16_LE),
    ("utf-16", "utf-16-be", codecs.BOM_UTF16_BE),
    ("utf-16", "utf-16-le", b""),
    ("utf-16", "utf-16-be", b""),
    ("utf-16le", "utf-16-le", b""),
    ("UTF-16LE", "utf-16-le", codecs.BOM_UTF16_LE),
    ("utf-16be", "utf-16-be", b""),
    ("utf_16_be", "utf-16-be", codecs.BOM_UTF16_BE),
    ("utf-32", "utf-32-le", codecs.BOM_UTF32_LE),
    ("utf-32", "utf-32-be", codecs.BOM_UTF32_BE),
    ("utf-32", "utf-32-le", b""),
    ("utf-32", "utf-32-be", b""),
    ("utf-32le", "utf-32-le", codecs.BOM_UTF32_LE),
    ("utf-32be", "utf-32-be", b""),
    ("us-ascii", "ascii", b""),
    ("ascii", "ascii", b""),
    ("latin-1", "latin-1", b""),
    ("ISO-8859-1", "latin-1", b""),
    ("latin1", "latin-1", b""),
]
REFUSED = [
    "punycode",
    "idna",
    "utf-7",
    "unicode_escape",
    "raw_unicode_escape",
    "rot13",
    "bz2_codec",
    "base64",
    "cp1252",
    "shift_jis",
    "no-such-charset",
    "",
]


def ids(case) -> str:
    label, _, bom = case
    return f"{label}{'+bom' if bom else ''}"


def encoded(payload: dict, codec: str, bom: bytes) -> bytes:
    # ASCII and Latin-1 carry what they cannot spell as JSON escapes, as clients do.
    text = json.dumps(payload, ensure_ascii=codec in ("ascii", "latin-1"))
    return bom + text.encode(codec)


# --- The decision ------------------------------------------------------------------------


@pytest.mark.parametrize("case", ACCEPTED, ids=ids)
def test_every_accepted_charset_and_alias_is_accepted(case):
    assert charsets.refusal({"charset": case[0]}) is None


def test_no_charset_is_utf8_and_accepted():
    assert charsets.refusal({}) is None
    assert charsets.json_reading(None, b'{"a"') == charsets.Reading("utf-8", "u1")


@pytest.mark.parametrize("name", REFUSED)
def test_other_charsets_are_refused_naming_them_and_what_is_accepted(name):
    message = charsets.refusal({"charset": name})
    assert message is not None
    assert repr(name) in message
    assert "utf-8, utf-16 or utf-32" in message and "iso-8859-1" in message


@pytest.mark.parametrize("name", ["utf-8\x00", "utf\udcff8", "x" * 5000])
def test_names_that_cannot_be_a_codec_are_refused_and_shown_cut(name):
    message = charsets.refusal({"charset": name})
    assert message is not None
    assert len(message) < 400


@pytest.mark.parametrize("case", ACCEPTED, ids=ids)
@pytest.mark.parametrize(
    "text",
    [
        '{"a": ["\u2200", "[[[", {"b": "\\"]"}], "c": "\U0001d11e"}',
        '[["\u5b5b\u227b"], "\\\\", {}]',  # code units 0x5B5B, 0x227B: brackets and a quote
        " \n [1, [2, [3]]]",
    ],
)
def test_the_guard_reads_what_the_parser_decodes(case, text):
    label, codec, bom = case
    if codec in ("ascii", "latin-1"):
        text = json.dumps(json.loads(text), ensure_ascii=True)
    body = bom + text.encode(codec)
    reading = charsets.json_reading(label, body[:4])
    assert body.decode(reading.codec) == text  # the mark dropped, the byte order right
    units = charsets.code_units(body, reading)
    assert reading.offset + units.nbytes == len(body)
    assert json_depth(units) == json_depth(text.encode("utf-8"))


@pytest.mark.parametrize(
    ("label", "head", "expected"),
    [
        ("utf-16", b"\xff\xfe[\x00", charsets.Reading("utf-16", "<u2", 2)),
        ("utf-16", b"\xfe\xff\x00[", charsets.Reading("utf-16", ">u2", 2)),
        ("utf-16", b"\x00[\x00]", charsets.Reading("utf-16-be", ">u2")),
        ("utf-16", b"[\x00]\x00", charsets.Reading("utf-16-le", "<u2")),
        # A mark against the label is a character (U+FFFE), which the parser refuses.
        ("utf-16-le", b"\xfe\xff\x00[", charsets.Reading("utf-16-le", "<u2")),
        ("utf-32", b"\x00\x00\xfe\xff", charsets.Reading("utf-32", ">u4", 4)),
        ("utf-32", b"[\x00\x00\x00", charsets.Reading("utf-32-le", "<u4")),
        ("latin-1", codecs.BOM_UTF8, charsets.Reading("iso8859-1", "u1")),
        ("utf8", codecs.BOM_UTF8 + b"[", charsets.Reading("utf-8-sig", "u1", 3)),
    ],
)
def test_byte_order_marks_and_bare_byte_orders(label, head, expected):
    assert charsets.json_reading(label, head) == expected


def test_a_refused_charset_has_no_reading():
    with pytest.raises(ValueError, match="punycode"):
        charsets.json_reading("punycode", b"aaaa")


# --- The API -----------------------------------------------------------------------------


@pytest.fixture
def accented(make_user):
    return make_user("zoë", password=PASSWORD)


@pytest.mark.django_db
@pytest.mark.parametrize("case", ACCEPTED, ids=ids)
def test_every_accepted_charset_parses_on_the_api(anon_api, accented, case):
    label, codec, bom = case
    body = encoded({"username": "zoë", "password": PASSWORD}, codec, bom)
    response = anon_api.post(TOKEN, body, content_type=f"application/json; charset={label}")
    assert response.status_code == 200, response.content
    assert Token.objects.get(key=response.json()["token"]).user == accented


@pytest.mark.django_db
@pytest.mark.parametrize("name", REFUSED)
def test_other_charsets_are_415_on_the_api_and_change_nothing(api, learner, name):
    body = json.dumps({"timezone": "Europe/Berlin"}).encode()
    response = api.patch("/api/v1/me/", body, content_type=f"application/json; charset={name}")
    assert response.status_code == 415
    detail = response.json()["detail"]
    assert repr(name) in detail and "nothing was read" in detail
    assert LearnerProfile.objects.get(user=learner).timezone == "UTC"


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["rot13", "bz2_codec", "punycode"])
def test_a_refused_charset_is_415_whatever_the_media_type(api, name):
    response = api.post(TOKEN, b"username=a", content_type=f"text/plain; charset={name}")
    assert response.status_code == 415
    response = api.delete(
        "/api/v1/decks/x/enroll/", content_type=f"application/json; charset={name}"
    )
    assert response.status_code == 415


@pytest.fixture
def served(db):
    """GET through the WSGI application gunicorn serves, as a client sends it; the
    test's connection stays open across the call, as Django's test client keeps it."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    from studyapp.wsgi import application

    def get(path: str, content_type: str) -> tuple[str, bytes]:
        environ: dict = {}
        setup_testing_defaults(environ)
        environ.update(PATH_INFO=path.split("?")[0], QUERY_STRING=path.partition("?")[2])
        environ.update(CONTENT_TYPE=content_type, HTTP_HOST="testserver")
        answer = {}
        chunks = application(environ, lambda status, headers: answer.update(status=status))
        return answer["status"], b"".join(chunks)

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield get
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.mark.parametrize("name", ["rot13", "bz2_codec", "punycode", "idna", "utf-7"])
def test_a_refused_charset_with_a_query_string_is_415_not_500(served, name):
    # Django decodes the query string in the body's charset as it builds the request,
    # before any middleware: rot13 and bz2_codec raised there, as did punycode on "a=b".
    status, body = served("/api/v1/cards/?tag=x", f"application/json; charset={name}")
    assert status.startswith("415"), body
    assert repr(name) in json.loads(body)["detail"]


def test_the_served_request_keeps_an_accepted_charset_and_drops_a_refused_one():
    from django.core.handlers.wsgi import WSGIHandler

    from studyapp.handler import Handler, Request
    from studyapp.wsgi import application

    assert isinstance(application, Handler) and issubclass(Handler, WSGIHandler)
    base: dict = {}
    setup_testing_defaults(base)
    latin = Request(
        {**base, "CONTENT_TYPE": "text/plain; charset=latin-1", "QUERY_STRING": "a=%E9"}
    )
    assert latin.encoding == "latin-1" and latin.GET["a"] == "\u00e9"
    rot = Request({**base, "CONTENT_TYPE": "text/plain; charset=rot13", "QUERY_STRING": "a=b"})
    assert rot.encoding is None and rot.content_params == {"charset": "rot13"}
    assert rot.content_type == "text/plain" and rot.GET["a"] == "b"


@pytest.mark.django_db
def test_a_refused_charset_is_answered_before_the_log_in_limit(anon_api, limits, accented):
    limits(login="1/hour")
    body = encoded({"username": "zoë", "password": "wrong"}, "utf-8", b"")
    assert anon_api.post(TOKEN, body, content_type="application/json").status_code == 400
    assert anon_api.post(TOKEN, body, content_type="application/json").status_code == 429
    refused = anon_api.post(TOKEN, body, content_type="application/json; charset=utf-7")
    assert refused.status_code == 415


@pytest.mark.django_db
def test_a_large_punycode_body_is_refused_without_being_decoded(anon_api, monkeypatch):
    calls = []
    real = encodings.punycode.punycode_decode
    monkeypatch.setattr(
        encodings.punycode,
        "punycode_decode",
        lambda *args: calls.append(len(args[0])) or real(*args),
    )
    b"abc-".decode("punycode")
    assert calls == [4]  # the spy sees what the codec decodes
    calls.clear()
    n = 1 << 19  # the report's body: 12 s at 512 KiB, a worker killed at 1 MiB
    body = b"a" * n + b"-" + b"a" * n
    response = anon_api.post(TOKEN, body, content_type="application/json; charset=punycode")
    assert response.status_code == 415
    assert calls == []  # nothing decoded: decoding it would take over a minute


@pytest.mark.django_db
@pytest.mark.parametrize("label", ["utf-8", "utf-16", "utf-32-be"])
def test_the_guard_reads_the_body_in_place_and_the_parser_decodes_it(
    anon_api, accented, monkeypatch, label
):
    seen = []
    monkeypatch.setattr(middleware, "json_shape", lambda units: seen.append(units) or Shape(1, 2))
    codec = {"utf-16": "utf-16-le", "utf-32-be": "utf-32-be"}.get(label, label)
    body = encoded({"username": "zoë", "password": PASSWORD}, codec, b"")
    response = anon_api.post(TOKEN, body, content_type=f"application/json; charset={label}")
    assert response.status_code == 200
    [units] = seen
    assert isinstance(units, np.ndarray)
    assert units.nbytes == len(body) and not units.flags.owndata  # a view, not a copy


# --- The pages ---------------------------------------------------------------------------


def profile_form(timezone: str) -> bytes:
    fields = {"timezone": timezone, "day_starts_at": "4", "reminder_hour": "9", "email": ""}
    return urlencode(fields).encode()


def multipart(fields: dict[str, str], codec: str) -> bytes:
    """A multipart/form-data body with boundary ``b``, its values in ``codec``."""
    parts = [
        b'--b\r\nContent-Disposition: form-data; name="%s"\r\n\r\n' % name.encode()
        + value.encode(codec)
        + b"\r\n"
        for name, value in fields.items()
    ]
    return b"".join(parts) + b"--b--\r\n"


@pytest.fixture
def page(learner) -> Client:
    client = Client()
    client.force_login(learner)
    return client


@pytest.mark.django_db
def test_an_accepted_charset_posts_a_form(page, learner):
    response = page.generic(
        "POST",
        "/profile/",
        profile_form("Europe/Berlin"),
        content_type="application/x-www-form-urlencoded; charset=utf-8",
    )
    assert response.status_code == 302
    assert LearnerProfile.objects.get(user=learner).timezone == "Europe/Berlin"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("label", "codec", "username", "password"),
    [
        ("utf-8", "utf-8", "zoë", "pässwörd-€-123"),
        ("iso-8859-1", "latin-1", "zoë", "pässwörd-123"),
        ("latin1", "latin-1", "zoë", "pässwörd-123"),
        ("us-ascii", "ascii", "zoe", "plain-pass-123"),
    ],
)
def test_accepted_charsets_decode_a_multipart_form(make_user, label, codec, username, password):
    user = make_user(username, password=password)
    client = Client()
    body = multipart({"username": username, "password": password}, codec)
    response = client.generic(
        "POST", "/login/", body, content_type=f"multipart/form-data; boundary=b; charset={label}"
    )
    assert response.status_code == 302, response.content[:300]
    assert client.session["_auth_user_id"] == str(user.pk)


@pytest.mark.django_db
@pytest.mark.parametrize("name", REFUSED)
def test_other_charsets_are_415_on_a_form_and_change_nothing(page, learner, name):
    for content_type, body in (
        ("application/x-www-form-urlencoded", profile_form("Europe/Berlin")),
        ("multipart/form-data; boundary=b", multipart({"timezone": "Europe/Berlin"}, "utf-8")),
    ):
        response = page.generic(
            "POST", "/profile/", body, content_type=f"{content_type}; charset={name}"
        )
        assert response.status_code == 415
        assert response["Content-Type"].startswith("text/plain")
        assert repr(name) in response.content.decode()
    assert LearnerProfile.objects.get(user=learner).timezone == "UTC"


@pytest.mark.django_db
def test_a_refused_charset_on_the_log_in_form_is_415_before_csrf(accented):
    client = Client(enforce_csrf_checks=True)
    body = f"username=zo%C3%AB&password={PASSWORD}".encode()
    for content_type in (
        "application/x-www-form-urlencoded; charset=punycode",
        "multipart/form-data; boundary=x; charset=unicode_escape",
    ):
        response = client.generic("POST", "/login/", body, content_type=content_type)
        assert response.status_code == 415, content_type
    assert "_auth_user_id" not in client.session
