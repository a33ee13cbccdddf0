"""The linear JSON depth scan against a byte-by-byte reference and against real JSON."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from studyapp.common import jsonscan
from studyapp.common.jsonscan import json_depth


def reference_depth(text: bytes) -> int:
    """One byte at a time: a backslash escapes the next byte, unescaped quotes toggle
    strings, brackets outside strings count."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in text:
        was_escaped, escaped = escaped, False
        if byte == ord("\\") and not was_escaped:
            escaped = True
        elif byte == ord('"') and not was_escaped:
            in_string = not in_string
        elif not in_string and byte in b"[{":
            depth += 1
            deepest = max(deepest, depth)
        elif not in_string and byte in b"]}":
            depth -= 1
    return deepest


def _nest(rng: np.random.Generator, level: int):
    """A random JSON value; its nesting is returned beside it."""
    kind = rng.integers(0, 4 if level < 12 else 2)
    if kind == 0:
        return "".join(rng.choice(list('ab[]{}"\\\n é'), size=rng.integers(0, 9))), 0
    if kind == 1:
        return float(rng.standard_normal()), 0
    children = [_nest(rng, level + 1) for _ in range(rng.integers(0, 4))]
    inner = max((d for _, d in children), default=0)
    if kind == 2:
        return [v for v, _ in children], inner + 1
    return {f"k{i}[\\": v for i, (v, _) in enumerate(children)}, inner + 1


@pytest.mark.parametrize("block", [1, 2, 3, 7, 64, jsonscan.BLOCK_BYTES])
def test_the_scan_matches_the_byte_by_byte_reference(monkeypatch, block):
    monkeypatch.setattr(jsonscan, "BLOCK_BYTES", block)
    rng = np.random.default_rng(block)
    alphabet = np.frombuffer(b'[]{}""\\\\\\a', dtype=np.uint8)
    for _ in range(300):
        text = rng.choice(alphabet, size=rng.integers(0, 60)).tobytes()
        assert json_depth(text) == reference_depth(text), text


@pytest.mark.parametrize("block", [1, 5, jsonscan.BLOCK_BYTES])
def test_the_scan_finds_the_nesting_of_real_json(monkeypatch, block):
    monkeypatch.setattr(jsonscan, "BLOCK_BYTES", block)
    rng = np.random.default_rng(7)
    for _ in range(200):
        value, depth = _nest(rng, 0)
        for ensure_ascii in (True, False):
            text = json.dumps(value, ensure_ascii=ensure_ascii).encode()
            assert json_depth(text) == depth, text


def test_escapes_and_runs_of_backslashes_across_blocks(monkeypatch):
    monkeypatch.setattr(jsonscan, "BLOCK_BYTES", 4)
    assert json_depth(b'["\\\\\\"[[[", [1]]') == 2  # \\ \" : the quote stays escaped
    assert json_depth(b'["\\\\\\\\", [[1]]]') == 3  # \\ \\ : the quote closes the string
    assert json_depth(b'["' + b"\\" * 9 + b'"[["]') == 1
    assert json_depth(b'["' + b"\\" * 10 + b'"[["]') == 3


@pytest.mark.parametrize(
    "body",
    [
        b"[" + b'"\\' * 200_000,
        b'["' + b'\\"' * 200_000,
        b"[" * 400_000,
        b'["' + b'[{\\"' * 100_000 + b'"]',
    ],
    ids=["quote-backslash", "escaped-quotes", "deep", "brackets-in-a-string"],
)
def test_crafted_shapes_scan_in_milliseconds(body):
    started = time.perf_counter()
    json_depth(body)
    # 400 KB: the scan takes a few milliseconds; the bound only guards against
    # anything that grows faster than the body.
    assert time.perf_counter() - started < 0.5


def test_escaped_bytes_match_a_walk_over_the_runs():
    rng = np.random.default_rng(3)
    alphabet = np.frombuffer(b'\\\\\\"a', dtype=np.uint8)
    assert jsonscan.escaped_bytes(np.frombuffer(b'"abc"', dtype=np.uint8)) is None
    for _ in range(500):
        codes = rng.choice(alphabet, size=rng.integers(1, 80))
        expected, escaping = [], False
        for byte in codes.tobytes():
            expected.append(escaping)
            escaping = byte == ord("\\") and not escaping
        found = jsonscan.escaped_bytes(codes)
        if found is None:
            assert ord("\\") not in codes.tobytes()
            continue
        others = codes != ord("\\")  # a backslash inside a run is no one's concern
        assert found[others].tolist() == np.array(expected)[others].tolist(), codes.tobytes()


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
@pytest.mark.parametrize("block", [3, jsonscan.BLOCK_BYTES])
def test_code_units_of_wide_charsets_scan_as_the_text_does(monkeypatch, codec, block):
    # Characters whose code units hold the bytes of quotes, brackets and backslashes:
    # U+2200 is 22 00, U+5B5B is 5B 5B, U+7B5C is 7B 5C, U+1D11E a surrogate pair.
    monkeypatch.setattr(jsonscan, "BLOCK_BYTES", block)
    rng = np.random.default_rng(11)
    alphabet = list('[]{}"\\a\u2200\u5b5b\u7b5c\U0001d11e\u5d22')
    dtype = {"16": "u2", "32": "u4"}[codec[4:6]]
    order = "<" if codec.endswith("le") else ">"
    for _ in range(300):
        text = "".join(rng.choice(alphabet, size=rng.integers(0, 40)))
        units = np.frombuffer(text.encode(codec), dtype=order + dtype)
        assert json_depth(units) == reference_depth(text.encode("utf-8")), text
