"""pycocoevalcap's CIDEr-D on the corpus where no reference has a 4-gram (it crashed here before).

Source of the value: pycocoevalcap 1.2 (https://github.com/salaniz/pycocoevalcap, BSD 2-Clause, Copyright (c)
2015, Xinlei Chen, Hao Fang, Tsung-Yi Lin, and Ramakrishna Vedantam), ``Cider().compute_score`` on the
hypotheses ``a b c d`` / ``x y`` against ``a b c`` / ``x y z``: 4.824071717646683, transcribed.
"""

from __future__ import annotations

from cotk_repro.metrics import get_metric


def test_cider_without_4grams_in_the_references():
    value = get_metric("cider").compute(["a b c d", "x y"], [["a b c"], ["x y z"]])["cider"]
    assert abs(value - 4.824071717646683) <= 1e-12
