"""Each metric's declared cross-machine tolerance (docs/metrics.md, "Tolerances") and how reproduce/diff resolve
the one a result is judged with (docs/reproduce.md, "Tolerances"): project tightens, reproducer widens."""

from __future__ import annotations

import json
import math
import re

import pytest

from cotk_repro.metrics.base import EXACT, UNDECLARED_TOLERANCE, Metric
from cotk_repro.metrics.facts import describe_metrics, facts_of, metric_class, tolerance_of_result_key
from cotk_repro.plugins import get_plugins
from cotk_repro.records.diffing import compare_results, describe_row, summarize
from cotk_repro.records.tolerances import Judged, ToleranceError, ToleranceRules

#: the model-based metrics: float kernels (torch, BLAS) that may sum in another order on another machine
MODEL_BASED = {"coherence", "fluency", "bertscore", "mauve", "nll-oracle", "nll-test", "embsim"}


def declared(table):
    return lambda key: table.get(key, UNDECLARED_TOLERANCE)


def test_every_registered_metric_lists_a_tolerance(cli):
    """`metrics --json`: every object has tolerance {rtol, atol}, numbers; exact metrics 0 and 0 (SPEC 13)."""
    res = cli("metrics", "--json")
    assert res.returncode == 0, res
    items = json.loads(res.stdout)
    assert {"bleu", "rouge", "cider"} <= {m["name"] for m in items}
    for m in items:
        tol = m["tolerance"]
        assert set(tol) == {"rtol", "atol"} and all(isinstance(v, float) and v >= 0 for v in tol.values()), m
        if m["name"] in MODEL_BASED:
            assert 0 < tol["rtol"] <= 1e-4, m
        else:
            assert tol == {"rtol": 0.0, "atol": 0.0}, m
    table = cli("metrics")
    assert "tolerance" in table.stdout and "exact" in table.stdout


def test_every_first_party_metric_declares_its_own():
    """No first-party metric lives on the undeclared default: each class (or its family) says what it measured."""
    for name in get_plugins().registry("metric"):
        cls = metric_class(name)
        owner = next(c for c in cls.__mro__ if "tolerance" in vars(c))
        assert owner is not Metric, f"{name} declares no tolerance"


def test_lazy_factories_carry_their_class_result_keys():
    """The registration's copy of result_keys (it spares a lookup the imports) equals the class's."""
    for name, entry in get_plugins().registry("metric").items():
        hint = getattr(entry.obj, "result_keys", None)
        if hint is not None:
            cls = metric_class(name)
            own = getattr(cls, "result_keys", None) or re.escape(name)
            assert hint in (own, re.escape(own)), name  # the same pattern (a plain name, escaped or not)


def test_tolerance_by_result_key_and_per_key_facts():
    assert tolerance_of_result_key("bleu") == EXACT
    assert tolerance_of_result_key("rouge-l") == EXACT and tolerance_of_result_key("fw-bleu") == EXACT
    assert tolerance_of_result_key("distinct-2") == EXACT
    assert tolerance_of_result_key("no-such-metric") == UNDECLARED_TOLERANCE

    class Judge(Metric):
        name = "judge"
        tolerance = (1e-3, 1e-6)
        result_keys = r"judge( parse-failures)?"
        key_facts = {"judge parse-failures": {"tolerance": EXACT}}  # noqa: RUF012 - a test's class

    assert facts_of(Judge).tolerance == (1e-3, 1e-6)
    assert facts_of(Judge, "judge parse-failures", Judge.key_facts["judge parse-failures"]).tolerance == EXACT


@pytest.mark.parametrize("bad", [(-1.0, 0.0), (math.inf, 0.0), (True, 0.0), "1e-6", (1e-6,)])
def test_a_bad_declared_tolerance_is_one_sentence(bad):
    class Bad(Metric):
        name = "bad"
        tolerance = bad

    with pytest.raises(ValueError, match="tolerance must be a pair of finite numbers >= 0"):
        facts_of(Bad)


def test_rules_project_tightens_reproducer_widens():
    decl = declared({"coherence": (1e-5, 1e-8), "bleu": EXACT})
    # declared by default
    assert ToleranceRules(declared=decl)("coherence") == Judged(1e-5, 1e-8, False)
    # project-wide: a ceiling, never widens (bleu stays exact)
    rules = ToleranceRules(project_rtol=1e-6, project_atol=1.0, declared=decl)
    assert rules("coherence") == Judged(1e-6, 1e-8, False) and rules("bleu") == Judged(0.0, 0.0, False)
    # per key: tighter is taken
    assert ToleranceRules(per_key={"coherence": {"rtol": 1e-7}}, declared=decl)("coherence") == Judged(1e-7, 1e-8)
    # per key: wider is refused, naming the metric and both values ...
    rules = ToleranceRules(per_key={"coherence": {"rtol": 1e-3}}, declared=decl)
    with pytest.raises(ToleranceError) as err:
        rules("coherence")
    assert "coherence" in err.value.message and "1e-03" not in err.value.message
    assert "rtol 0.001" in err.value.message and "rtol 1e-05" in err.value.message
    # ... unless the reproducer widens, and then it is marked
    widened = ToleranceRules(per_key={"coherence": {"rtol": 1e-3}}, widen=True, declared=decl)
    assert widened("coherence") == Judged(1e-3, 1e-8, True)
    # flags: tighten only ...
    flags = ToleranceRules(rtol=1e-3, atol=1e-9, declared=decl)
    assert flags("coherence") == Judged(1e-5, 1e-9, False) and flags("bleu") == Judged(0.0, 0.0, False)
    # ... or, with --widen-tolerance, as given
    flags = ToleranceRules(rtol=1e-3, atol=1e-9, widen=True, declared=decl)
    assert flags("coherence") == Judged(1e-3, 1e-9, True) and flags("bleu") == Judged(1e-3, 1e-9, True)
    with pytest.raises(ToleranceError, match="--rtol must be a finite number >= 0"):
        ToleranceRules(rtol=-1.0)
    with pytest.raises(ToleranceError, match="must be a finite number >= 0"):
        ToleranceRules(per_key={"bleu": {"atol": math.nan}}, declared=decl)("bleu")


def test_rows_say_identical_and_what_they_were_judged_with():
    a = {"coherence": {"value": 0.5, "hash": "h"}, "bleu": {"value": 0.3, "hash": "g"}, "x": {"value": 1.0}}
    b = {"coherence": {"value": 0.5000001, "hash": "h"}, "bleu": {"value": 0.3, "hash": "g"}, "x": {"value": 1.0}}
    rules = ToleranceRules(declared=declared({"coherence": (1e-5, 1e-8), "bleu": EXACT}))
    rows = {r.metric: r for r in compare_results(a, b, rules)}
    assert rows["coherence"].verdict == "reproduced" and not rows["coherence"].identical
    assert rows["coherence"].describe() == "within tolerance (moved by 1e-07)"
    assert rows["bleu"].identical and rows["bleu"].describe() == "identical" and rows["bleu"].rtol == 0.0
    assert rows["x"].describe() == "unverifiable, identical"
    d = rows["coherence"].as_dict()
    assert d["identical"] is False and (d["rtol"], d["atol"], d["widened"]) == (1e-5, 1e-8, False)
    b["bleu"]["value"] = 0.30000000000000004
    row = next(r for r in compare_results(a, b, rules) if r.metric == "bleu")
    assert row.verdict == "differs" and not row.identical and row.describe() == "differs (moved by 5.6e-17)"
    # a plain (rtol, atol) pair still works, and a stranger's row is worded without trusting its shape
    assert compare_results(a, a, lambda k: (0.0, 0.0))[0].identical
    assert describe_row({"verdict": "reproduced"}) == "reproduced"
    assert describe_row({"verdict": "differs", "abs_diff": "x"}) == "differs"
    assert describe_row({"verdict": "reproduced", "identical": False, "abs_diff": 1e-7, "widened": True}) == (
        "within tolerance (moved by 1e-07, widened)"
    )


def test_describe_metrics_of_a_broken_metric_still_has_a_tolerance(monkeypatch):
    items = {m["name"]: m for m in describe_metrics()}
    assert all("tolerance" in m for m in items.values())


def test_summarize_words_rows_differing_first():
    """The fleet worker's reason and log line: the same words as the table, differing metrics first."""
    a = {k: {"value": 1.0, "hash": "h"} for k in ("bleu", "rouge-l", "coherence", "nist")}
    b = {**a, "coherence": {"value": 1.0000003, "hash": "h"}, "nist": {"value": 1.01, "hash": "h"}}
    rows = [r.as_dict() for r in compare_results(a, b, lambda k: (1e-5, 1e-8) if k == "coherence" else (0.0, 0.0))]
    assert summarize(rows) == (
        "differs: nist (moved by 0.01); within tolerance: coherence (moved by 3e-07); identical: bleu, rouge-l"
    )
    assert summarize([{"metric": "x", "verdict": "missing"}]) == "missing: x"
