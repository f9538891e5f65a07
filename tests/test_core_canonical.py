"""Canonical JSON and record ids: property-based tests (hypothesis) and fixed cases."""

from __future__ import annotations

import hashlib
import json
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cotk_repro.core.canonical import StreamHasher, canonical_json, hash_object, is_sha256_hex
from cotk_repro.errors import RecordError
from cotk_repro.records import compute_id, finalize, validate_record

finite_floats = st.floats(allow_nan=False, allow_infinity=False)
scalars = st.none() | st.booleans() | st.integers() | finite_floats | st.text()
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
json_objects = st.dictionaries(st.text(max_size=8), json_values, min_size=1, max_size=6)


def shuffled(obj, rng: random.Random):
    """The same JSON value with every object's keys in another insertion order."""
    if isinstance(obj, dict):
        items = list(obj.items())
        rng.shuffle(items)
        return {k: shuffled(v, rng) for k, v in items}
    if isinstance(obj, list):
        return [shuffled(v, rng) for v in obj]
    return obj


def record_like(body: dict) -> dict:
    return {
        "schema": "cotk-repro/record",
        "schema_version": 1,
        "status": "ok",
        "code": {"commit": "0" * 40},
        "environment": {},
        "project": {},
        "command": {},
        "results": {},
        "extra": body,
    }


@settings(max_examples=150, deadline=None)
@given(json_objects, st.randoms(use_true_random=False))
def test_hash_stable_under_key_order(obj, rng):
    assert hash_object(shuffled(obj, rng)) == hash_object(obj)
    assert canonical_json(shuffled(obj, rng)) == canonical_json(obj)


@settings(max_examples=150, deadline=None)
@given(json_objects)
def test_hash_stable_under_reserialization(obj):
    # through the ordinary json module, pretty-printed, and back: same canonical bytes and id
    again = json.loads(json.dumps(obj, indent=3, sort_keys=False))
    assert canonical_json(again) == canonical_json(obj)
    rec = finalize(record_like(obj))
    reread = json.loads(json.dumps(rec, indent=2))
    assert validate_record(reread)["id"] == rec["id"]


@settings(max_examples=150, deadline=None)
@given(finite_floats)
def test_floats_round_trip(x):
    data = canonical_json({"v": x})
    back = json.loads(data)["v"]
    assert back == x and math.copysign(1.0, back) == math.copysign(1.0, x)
    # shortest round-trip form: Python's repr (e.g. 0.1 -> "0.1", never "0.1000000000000000055")
    assert data == ('{"v":' + repr(x) + "}").encode()


@settings(max_examples=150, deadline=None)
@given(json_objects, st.data())
def test_id_differs_when_any_value_changes(obj, data):
    rec = record_like(obj)
    key = data.draw(st.sampled_from(sorted(obj)))
    old = obj[key]
    new = data.draw(json_values.filter(lambda v: canonical_json(v) != canonical_json(old)))
    changed = record_like({**obj, key: new})
    assert compute_id(changed) != compute_id(rec)


def test_fixed_examples():
    assert canonical_json({"b": 1, "a": [1.5, "é", None, True]}) == '{"a":[1.5,"é",null,true],"b":1}'.encode()
    assert hash_object({"a": 1}) == hashlib.sha256(b'{"a":1}').hexdigest()
    assert canonical_json(0.1) == b"0.1" and canonical_json(1e16) == b"1e+16"
    assert canonical_json((1, 2)) == canonical_json([1, 2])


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), {1: "x"}, {"a": {1, 2}}, object()])
def test_refuses_values_without_a_canonical_form(bad):
    with pytest.raises((TypeError, ValueError)):
        canonical_json(bad)


def test_stream_hasher_frames_items():
    a, b = StreamHasher("x"), StreamHasher("x")
    a.update("ab")
    a.update("c")
    b.update("a")
    b.update("bc")
    assert a.hexdigest() != b.hexdigest()
    assert is_sha256_hex(a.hexdigest()) and not is_sha256_hex("A" * 64) and not is_sha256_hex("a" * 63)


def test_validate_record_detects_tampering():
    rec = finalize(record_like({"bleu": 0.25}))
    assert rec["id"].startswith("sha256:") and is_sha256_hex(rec["id"][7:])
    tampered = json.loads(json.dumps(rec))
    tampered["extra"]["bleu"] = 0.26
    with pytest.raises(RecordError, match="does not match its content"):
        validate_record(tampered)
    with pytest.raises(RecordError, match="not a cotk-repro record"):
        validate_record({"schema": "other"})


def test_token_list_items_equal_canonical_json_of_each_list():
    """The bulk encoders of token lists (data digests, BLEU reference hashes) and of strings (raw digests) give
    canonical_json([item]) for every item: plain tokens, quotes, backslashes, line breaks, the separator
    character, other control characters, unicode, empty tokens and empty lists, in parts encoded in bulk (quotes
    and backslashes escaped in bulk) or item by item."""
    from cotk_repro.core.canonical import TOKEN_PART, token_list_items

    rng = random.Random(7)
    from cotk_repro.core.canonical import string_items

    alphabet = ["a", "bc", '"', "\\", "\n", "\x01", "\x1f", "\t", "é", "日本", "x y", "\u2028", ""]
    # an empty list beside a token holding the separator: the separator counts balance
    assert token_list_items([[], ["a\x1fb"]]) == [canonical_json([[]]), canonical_json([["a\x1fb"]])]
    for trial in range(200):
        lists = [
            ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 3))) for _ in range(rng.randint(0, 4))]
            for _ in range(rng.randint(0, 2 * TOKEN_PART + 5))
        ]
        if trial % 2:  # parts without control characters: the bulk path, quotes and backslashes escaped in bulk
            lists = [[t for t in tokens if t.isprintable()] or ["w"] for tokens in lists]
            if lists:
                lists[rng.randrange(len(lists))] = ['say "hi"', "a\\b"]
        assert token_list_items(lists) == [canonical_json([tokens]) for tokens in lists]
        texts = [" ".join(tokens) for tokens in lists]
        assert string_items(texts) == [canonical_json([text]) for text in texts]
