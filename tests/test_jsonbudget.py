"""core/jsonbudget: the one parse budget of every stranger's JSON (issue 39), checked against independent references.

The scan's depth and value counts are compared with a recursive walk of what ``json.loads`` returns, over
random documents whose strings hold brackets, commas, quotes and backslashes; each refusal is one sentence.
"""

from __future__ import annotations

import json
import random

import pytest

from cotk_repro.core import jsonbudget as jb


def _depth(value, level: int = 0) -> int:
    if isinstance(value, list):
        return max([level + 1, *(_depth(v, level + 1) for v in value)])
    if isinstance(value, dict):
        return max([level + 1, *(_depth(v, level + 1) for v in value.values())])
    return level


def _values(value) -> int:
    if isinstance(value, list):
        return 1 + sum(_values(v) for v in value)
    if isinstance(value, dict):
        return 1 + sum(_values(v) for v in value.values())
    return 1


TRICKY = ['a\\"[', "]}{,", '"', "\\", "\\\\", "", "x,y", "\u00e9[", 1, 2.5, None, True]


def _random_doc(rng: random.Random, level: int = 0):
    r = rng.random()
    if level > 6 or r < 0.3:
        return rng.choice(TRICKY)
    if r < 0.65:
        return [_random_doc(rng, level + 1) for _ in range(rng.randint(0, 3))]
    return {
        rng.choice(["k[", 'k"', "k\\", "k,"]) + str(i): _random_doc(rng, level + 1) for i in range(rng.randint(0, 3))
    }


def test_the_scan_measures_what_json_loads_builds():
    rng = random.Random(39)
    for _ in range(3000):
        doc = _random_doc(rng)
        for text in (json.dumps(doc), json.dumps(doc, ensure_ascii=False, indent=1)):
            shape = jb.scan(text.encode(), jb.Budget(depth=100))
            assert shape.depth == _depth(doc), text
            assert shape.elements >= _values(doc), text  # an upper bound: a key and its value count once
            assert shape.elements <= 2 * _values(doc) + 1, text


def test_values_are_counted_across_chunks():
    """A document longer than the scan's chunk, with a string that spans a chunk's end."""
    doc = {"a": "[" * (jb._CHUNK + 7), "b": [[1, 2]] * 300_000}
    data = json.dumps(doc).encode()
    shape = jb.scan(data, jb.Budget(elements=10**7))
    assert shape.depth == 3 and _values(doc) <= shape.elements <= 2 * _values(doc) + 1
    assert jb.loads(data, what="x", budget=jb.Budget(elements=10**7)) == doc


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"[" * 200_000 + b"]" * 200_000, "the file nests deeper than 64 levels"),
        (b"[" * 200_000, "the file nests deeper than 64 levels"),  # not JSON either: the depth is what is said
        (b"[" + b"{}," * 600_000 + b"{}]", "the file holds about 1,200,00"),
        (b'{"a": 1', "the file is not valid JSON (Expecting ',' delimiter at line 1, column 8)"),
        (b'{"a": "\xff"}', "the file is not UTF-8 text"),
        (b"[" * 65 + b"]" * 65, "nests deeper than 64 levels"),
    ],
)
def test_each_refusal_is_one_sentence(data, words):
    with pytest.raises(jb.JSONBudgetError) as err:
        jb.loads(data, what="the file")
    assert words in err.value.message and err.value.message.count(". ") == 0
    assert err.value.exit_code == 2 and isinstance(err.value, ValueError)


def test_within_budget_is_exactly_json_loads():
    for text in (
        '{"a": [1, 2, {"b": "x[[[,,"}]}',
        "[]",
        "1",
        '"x"',
        '{"a": "\\"[[", "b": "\\\\"}',
        "[" * 64 + "]" * 64,
    ):
        assert jb.loads(text, what="t") == json.loads(text)
        assert jb.loads(text.encode(), what="t") == json.loads(text)


def test_the_byte_limit_comes_first():
    with pytest.raises(jb.JSONBudgetError, match="is 11 bytes, over the 10-byte limit"):
        jb.loads(b'"xxxxxxxxx"', what="x", budget=jb.Budget(bytes=10))


def test_an_allowance_counts_each_document_again():
    allowance = jb.Allowance(jb.Budget(bytes=100, elements=10))
    assert allowance.spend(40, 4) and allowance.spend(40, 4)  # the same blob under two paths: counted twice
    assert not allowance.spend(40, 1) and not allowance.spend(10, 3)
    assert (allowance.bytes, allowance.elements) == (80, 8)


def test_shown_quotes_at_most_200_characters():
    for value in ("A" * 10_000_000, b"B" * 10_000_000, list(range(1_000_000)), {str(i): i for i in range(1000)}):
        text = jb.shown(value)
        assert len(text) <= jb.QUOTE
    assert jb.shown("short") == "'short'"


def test_a_result_dicts_error_quotes_200_characters_of_the_value():
    from cotk_repro.core.results import normalize_results
    from cotk_repro.errors import RunError

    with pytest.raises(RunError) as err:
        normalize_results({"bleu": "A" * 1_000_000})
    assert len(err.value.message) < 400 and "is not a finite number" in err.value.message
    with pytest.raises(RunError) as err:
        normalize_results({"K" * 1_000_000: [{}] * 100_000})
    assert len(err.value.message) < 600


def test_the_dashboard_api_refuses_a_deep_body_in_one_sentence():
    from fastapi import HTTPException

    from cotk_repro.dashboard.api import _json_body

    with pytest.raises(HTTPException) as err:
        _json_body(b'{"record": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    assert err.value.status_code == 422 and err.value.detail == "the body nests deeper than 64 levels"


def test_jsonl_lines_go_through_the_budget(tmp_path):
    from cotk_repro.metrics.base import MetricError
    from cotk_repro.metrics.files import read_references

    path = tmp_path / "refs.jsonl"
    path.write_text('{"references": ["a b"]}\n{"references": ' + "[" * 5000 + "]" * 5000 + "}\n")
    with pytest.raises(MetricError, match="line 2 nests deeper than 64 levels"):
        read_references(path)
