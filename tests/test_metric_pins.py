"""Every registered built-in metric's published hash and signature, pinned on a fixed small input.

The values in ``tests/fixtures/metric_pins.json`` were produced by the code before the hash settings and the
signature of each metric came from one declaration (:mod:`cotk_repro.metrics.declaration`): a refactor that
changes any published hash or signature fails here. Regenerate only for a deliberate, versioned change:
``python3 tests/test_metric_pins.py > tests/fixtures/metric_pins.json``.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

from cotk_repro.core.results import HASH_SUFFIX, SIGNATURE_SUFFIX
from cotk_repro.metrics import get_metric, score

PINS = Path(__file__).parent / "fixtures" / "metric_pins.json"

HYPS = ["the cat sat on the mat .", "a dog ran in the park today", "it is raining cats and dogs", "hello world"]
REFS = [
    ["the cat is on the mat ."],
    ["a dog runs in the park", "the dog ran in a park"],
    ["it rains cats and dogs"],
    ["hello there world"],
]
ONE_REF = [[rs[0]] for rs in REFS]
VECTORS = {
    w: [math.sin(i + k) for k in range(4)]
    for i, w in enumerate(
        "the cat sat on mat . a dog ran in park today it is raining cats and dogs hello world".split()
    )
}
GROUPS = [["a b c", "a b d"], ["x y", "x z", "y z"]]

#: (case id, metric, options, input): input "text" (HYPS, REFS), "one" (HYPS, one reference each), "free"
#: (HYPS, no references), "groups" (compute_groups), "contexts" (response lists per context), "labels",
#: "lists" (perplexity's compute_lists)
CASES: list[tuple[str, str, dict[str, Any], str]] = [
    ("bleu", "bleu", {}, "text"),
    ("bleu-n2", "bleu", {"ngram": 2}, "text"),
    ("bleu-weights", "bleu", {"ngram": 3, "weights": [0.5, 0.3, 0.2]}, "text"),
    ("bleu-m0", "bleu", {"smoothing": "method0"}, "text"),
    ("bleu-m1", "bleu", {"smoothing": "method1"}, "text"),
    ("bleu-m5", "bleu", {"smoothing": "method5"}, "text"),
    ("bleu-13a", "bleu", {"tokenizer": "13a"}, "text"),
    ("bleu-intl", "bleu", {"tokenizer": "intl"}, "text"),
    ("bleu-zh", "bleu", {"tokenizer": "zh"}, "text"),
    ("bleu-char", "bleu", {"tokenizer": "char"}, "text"),
    ("bleu-space", "bleu", {"tokenizer": "space"}, "text"),
    ("bleu-nfkc", "bleu", {"normalize": "nfkc"}, "text"),
    ("bleu-given", "bleu", {"retokenize": False}, "text"),
    ("bleu-sacre", "bleu", {"denominators": "sacrebleu"}, "text"),
    ("bleu-reweigh", "bleu", {"auto_reweigh": True}, "one"),
    ("bleu-one", "bleu", {}, "one"),
    ("self-bleu", "self-bleu", {}, "free"),
    ("self-bleu-sample", "self-bleu", {"sample": 3, "seed": 7}, "free"),
    ("self-bleu-cotk", "self-bleu", {"sample": 3, "sample_mode": "cotk"}, "free"),
    ("self-bleu-13a-nfc", "self-bleu", {"tokenizer": "13a", "normalize": "nfc", "ngram": 2}, "free"),
    ("self-bleu-given", "self-bleu", {"retokenize": False, "ngram": 2, "weights": [0.6, 0.4]}, "free"),
    ("fw-bw-bleu", "fw-bw-bleu", {}, "text"),
    ("fw-bw-bleu-sample", "fw-bw-bleu", {"sample": 2, "ngram": 2}, "text"),
    ("fw-bw-bleu-cotk", "fw-bw-bleu", {"sample": 2, "sample_mode": "cotk"}, "text"),
    ("fw-bw-bleu-tok", "fw-bw-bleu", {"tokenizer": "intl", "normalize": "nfkc", "smoothing": "method2"}, "text"),
    ("bleu-pr", "bleu-precision-recall", {}, "contexts"),
    ("bleu-pr-3-f32", "bleu-precision-recall", {"ngram": 3, "score_dtype": "float32"}, "contexts"),
    ("emb-pr-avg", "embedding-precision-recall", {"vectors": VECTORS}, "contexts"),
    ("emb-pr-extrema", "embedding-precision-recall", {"vectors": VECTORS, "mode": "extrema"}, "contexts"),
    ("chrf", "chrf", {}, "text"),
    (
        "chrf++",
        "chrf",
        {"word_order": 2, "lowercase": True, "whitespace": True, "eps_smoothing": True, "beta": 3},
        "text",
    ),
    ("ter", "ter", {}, "text"),
    ("ter-all", "ter", {"normalized": True, "no_punct": True, "asian_support": True, "case_sensitive": True}, "text"),
    ("cider", "cider", {}, "text"),
    ("cider-n2", "cider", {"ngram": 2, "sigma": 3.0, "tokenizer": "nltk"}, "text"),
    ("gleu", "gleu", {}, "text"),
    ("gleu-2-3", "gleu", {"min_len": 2, "max_len": 3}, "text"),
    ("nist", "nist", {}, "text"),
    ("nist-3", "nist", {"ngram": 3, "tokenizer": "nltk"}, "text"),
    ("meteor", "meteor", {"wordnet": False}, "text"),
    ("meteor-abg", "meteor", {"wordnet": False, "alpha": 0.8, "beta": 2.0, "gamma": 0.4}, "text"),
    ("rouge", "rouge", {}, "text"),
    ("rouge-lsum", "rouge", {"types": ["rouge1", "rougeLsum"], "stemmer": True, "alpha": 0.3}, "text"),
    ("rouge-sep", "rouge", {"types": ["rougeLsum"], "sentence_separator": "<n>"}, "text"),
    ("distinct", "distinct", {}, "free"),
    ("distinct-refs", "distinct", {"ngram": 3, "padded": True}, "text"),
    ("ngram-entropy", "ngram-entropy", {}, "free"),
    ("ngram-entropy-groups", "ngram-entropy", {"group_size": 2, "log_base": 2}, "text"),
    ("ngram-entropy-given", "ngram-entropy", {"ngram": 2}, "groups"),
    ("fw-rv-ppl", "fw-rv-ppl", {"ngram": 2}, "text"),
    ("fw-rv-ppl-cotk", "fw-rv-ppl", {"ngram": 1, "mode": "cotk", "tokenizer": "space"}, "text"),
    ("fw-rv-ppl-interp", "fw-rv-ppl", {"ngram": 2, "mode": "interpolated", "discount": 0.5, "unk_cutoff": 2}, "text"),
    ("accuracy", "accuracy", {}, "labels"),
    # the lm plugin's metric that loads no model
    ("group-entropy", "group-entropy", {"group_size": 2}, "free"),
    ("group-entropy-aug", "group-entropy", {"augmentation": {"method": "eda", "n": 2}}, "groups"),
    ("group-entropy-aug-str", "group-entropy", {"augmentation": "paraphrase", "ngram": 2, "group_size": 2}, "text"),
    ("perplexity", "perplexity", {"frequent": ["a", "b"], "rare": ["c", "d"]}, "lists"),
    (
        "perplexity-rules",
        "perplexity",
        {
            "frequent": ["a", "b"],
            "rare": ["c", "d"],
            "unk_targets": "skip",
            "rare_words": "cotk",
            "reference_check": "cotk",
        },
        "lists",
    ),
    ("perplexity-turns", "perplexity", {"frequent": ["a", "b"], "rare": ["c", "d"], "multi_turn": True}, "lists"),
    (
        "perplexity-turns-all",
        "perplexity",
        {
            "frequent": ["a", "b"],
            "rare": ["c", "d"],
            "multi_turn": True,
            "skip_first_turn": False,
            "rare_words": "cotk",
        },
        "lists",
    ),
    ("perplexity-unk-skip", "perplexity", {"frequent": ["a", "b"], "rare": ["c", "d"], "unk_targets": "skip"}, "lists"),
]


def missing_plugin(metric: str) -> str | None:
    """Why ``metric`` cannot run here: a first-party plugin's metric whose plugin is not installed (else None)."""
    from cotk_repro.first_party import provider
    from cotk_repro.metrics import metric_names

    if (plugin := provider("metric", metric)) and metric not in metric_names():
        return f"the metric {metric} comes with the plugin {plugin}, which is not installed"
    return None


def _run(metric: str, options: dict[str, Any], kind: str) -> dict[str, Any]:
    m = get_metric(metric, **options)
    if kind == "text":
        return score(m, HYPS, REFS)
    if kind == "one":
        return score(m, HYPS, ONE_REF)
    if kind == "free":
        return score(m, HYPS)
    if kind == "groups":
        return m.compute_groups(GROUPS)
    if kind == "contexts":
        return score(m, [[h, HYPS[(i + 1) % 4]] for i, h in enumerate(HYPS)], REFS)
    if kind == "labels":
        return score(m, [1, 2, 3, "x"], [[1], [0], [3], ["x"]])
    assert kind == "lists"
    return m.compute_lists(
        [["a", "c"], ["b", "zz", "d"]],  # type: ignore[attr-defined,no-any-return]
        [[math.log(0.5), math.log(0.2), math.log(0.3)], [math.log(0.4), math.log(0.1), math.log(0.2), math.log(0.3)]],
    )


def companions(result: dict[str, Any]) -> dict[str, list[str | None]]:
    """``{key: [hash, signature]}`` of every value in a result dict."""
    out = {}
    for key, value in result.items():
        if key.endswith((HASH_SUFFIX, SIGNATURE_SUFFIX)) or not isinstance(value, float):
            continue
        out[key] = [result.get(key + HASH_SUFFIX), result.get(key + SIGNATURE_SUFFIX)]
    return out


def current() -> dict[str, dict[str, list[str | None]]]:
    return {case: companions(_run(metric, options, kind)) for case, metric, options, kind in CASES}


@pytest.mark.parametrize("case,metric,options,kind", CASES, ids=[c[0] for c in CASES])
def test_published_hash_and_signature_are_unchanged(case: str, metric: str, options: dict[str, Any], kind: str) -> None:
    if why := missing_plugin(metric):
        pytest.skip(why)
    pinned = json.loads(PINS.read_text(encoding="utf-8"))[case]
    assert companions(_run(metric, options, kind)) == pinned


def test_every_builtin_metric_is_pinned() -> None:
    from cotk_repro.plugins import get_plugins

    registry = get_plugins().registry("metric")
    builtin = {n for n, entry in registry.items() if entry.plugin == "cotk_repro.builtins.metrics"}
    assert builtin - {"multi-turn-perplexity"} <= {c[1] for c in CASES}


if __name__ == "__main__":
    json.dump(current(), sys.stdout, indent=1, sort_keys=True, ensure_ascii=False)
    sys.stdout.write("\n")
