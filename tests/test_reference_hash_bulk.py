"""The bulk reference-set hash (one-reference samples through ``token_list_items``) gives the bytes of the generic,
per-sample canonical JSON: the definition below, written from docs/spec.md section 5 without the library's encoders."""

from __future__ import annotations

import hashlib
import json
import random

import pytest

from cotk_repro.text.reference_hashes import _generic_item, _sample_items, reference_set_hash


def _definition(metric, settings, references):
    """The reference-set hash as specified: sorted canonical JSON items of each sample's sorted references, each
    framed by its 8-byte length, after the label, the metric and its settings and the count."""

    def canon(obj):
        return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False).encode(
            "utf-8"
        )

    items = sorted(canon(sorted(list(r) for r in refs)) for refs in references)
    h = hashlib.sha256()
    for data in [
        canon("cotk-repro/reference-set/v1"),
        canon({"metric": metric, "settings": dict(settings)}),
        canon(len(items)),
        *items,
    ]:
        h.update(len(data).to_bytes(8, "big") + data)
    return h.hexdigest()


ALPHABET = [
    "a",
    "b",
    "<unk>",
    "é",
    "日本",
    "😀",
    "\U0001f600x",
    '"',
    "\\",
    "\x1f",
    "\n",
    "\t",
    "\x00",
    " ",
    "",
    "a b",
    "\u2028",
    "ß",
    "\ufeff",
]


def _token(rng):
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 3)))


def _corpus(rng, n, multi=0.0, empty=0.1):
    out = []
    for _ in range(n):
        k = rng.randint(2, 3) if rng.random() < multi else 1
        out.append([[] if rng.random() < empty else [_token(rng) for _ in range(rng.randint(1, 6))] for _ in range(k)])
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("multi", [0.0, 0.2])
def test_bulk_equals_definition_on_random_unicode(seed, multi):
    rng = random.Random(seed)
    refs = _corpus(rng, rng.choice([20, 300, 2500]), multi)
    settings = {"n": 4, "w": [0.25, 0.5], "tok": "é"}
    assert reference_set_hash("m", settings, refs) == _definition("m", settings, refs)
    assert _sample_items(refs) == [_generic_item(r) for r in refs]


def test_bulk_path_is_taken_and_matches_on_plain_text():
    refs = [[f"tok{i} <unk> x{i % 7}".split()] for i in range(3000)]
    assert _sample_items(refs) == [_generic_item(r) for r in refs]
    assert reference_set_hash("bleu", {}, refs) == _definition("bleu", {}, refs)
    # chrF / TER's shape: each reference one string in a list; tuples as lists
    texts = [[[f"a text {i} 😀 «ü»"]] for i in range(500)] + [[("x", "y")]] * 40
    assert reference_set_hash("chrf", {"nc": 6}, texts) == _definition("chrf", {"nc": 6}, texts)


def test_edge_inputs_fall_back_to_the_generic_path():
    base = [[["a", "b"]] for _ in range(100)]
    cases = {
        "all empty references": [[[]] for _ in range(100)],
        "empty strings": [[[""]] for _ in range(50)] + [[["", ""]] for _ in range(50)],
        "numbers": base + [[[1, 2]]],
        "nested lists": base + [[[["a"], ["b"]]]],
        "a string as a reference": base + [["abc"]],
        "no references": base + [[]],
        "non-BMP and <unk>": [[["\U00010348", "<unk>", "\U0010ffff"]] for _ in range(64)],
        "separators inside tokens": [[["a\x1fb", "c\nd"]] for _ in range(64)],
    }
    for name, refs in cases.items():
        assert reference_set_hash("x", {}, refs) == _definition("x", {}, refs), name


def test_generators_are_hashed_like_lists():
    refs = [[["a", str(i)]] for i in range(200)]
    assert reference_set_hash("x", {}, (r for r in refs)) == _definition("x", {}, refs)
    gen_refs = [[iter(["a", str(i)])] for i in range(200)]  # an iterator as a token list: generic path
    assert reference_set_hash("x", {}, gen_refs) == _definition("x", {}, refs)


def test_what_the_generic_path_refuses_is_refused():
    with pytest.raises(ValueError):
        reference_set_hash("x", {}, [[["a"]]] * 40 + [[[float("nan")]]])
    with pytest.raises(UnicodeEncodeError):
        reference_set_hash("x", {}, [[["a"]]] * 40 + [[["\ud800"]]])
