"""`cotk_repro.metrics.evaluate` refuses inputs that `list()` would quietly take apart (issue 40)."""

from __future__ import annotations

import pytest

from cotk_repro.metrics import MetricError, MetricInputError, evaluate


@pytest.mark.parametrize(
    "hypotheses, references, message",
    [
        ("the cat sat", [["the cat sat"]], "hypotheses is a single str, not a list of strings"),
        (b"the cat", [["the cat"]], "hypotheses is a single bytes"),
        ({"a": 1}, [["a"]], "hypotheses is a dict"),
        (3, [["a"]], "hypotheses is a int"),
        (["the cat"], "the cat", "references is a single str"),
    ],
)
def test_a_bare_string_is_refused_not_scored_character_by_character(hypotheses, references, message):
    with pytest.raises(MetricInputError, match=message) as info:
        evaluate(["rouge", "bleu"], hypotheses, references)
    assert isinstance(info.value, TypeError) and isinstance(info.value, MetricError)
    assert "\n" not in str(info.value)


def test_missing_references_name_the_metric():
    with pytest.raises(MetricError, match=r"^rouge needs references"):
        evaluate(["rouge"], ["the cat"])
    with pytest.raises(MetricError, match=r"^bleu needs references"):
        evaluate(["distinct", "bleu"], ["the cat"])
    assert "distinct-1" in evaluate(["distinct"], ["the cat", "a dog"])  # a metric without references still runs
    # the same list scores as before
    assert evaluate(["rouge"], ["the cat"], [["the cat"]])["rouge-1"] == 1.0
