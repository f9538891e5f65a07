"""augment (WordNet, ctg), group-entropy, correlate and lm finetune."""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections import Counter

import pytest

# fixtures are imported by name (no conftest.py: see lm_support)
from lm_support import (  # noqa: F401
    OPENSUB,
    _isolated_dirs,
    bpe_json,
    run_cli,
    tiny_gpt2,
)

pytest.importorskip(
    "cotk_repro_lm", reason="the cotk-repro-lm plugin is not installed (pip install -e plugins/cotk-repro-lm)"
)

from cotk_repro.metrics import get_metric

QUERIES = [
    "the old man walks his dog in the quiet park .",
    "she quickly reads a long book .",
    "we eat warm bread at the small table .",
]


@pytest.fixture(scope="module")
def wordnet():
    from cotk_repro_lm.wordnet import WordNetMissing, load_wordnet

    try:
        return load_wordnet(None)
    except WordNetMissing as exc:
        pytest.skip(f"WordNet is not installed: {exc.message}")


def test_wordnet_augmentation_is_seeded_and_substitutes_synonyms(wordnet, tmp_path):
    from cotk_repro.data.tokenizers import wordpunct_tokenize
    from cotk_repro_lm.augment import augment_queries

    q = tmp_path / "q.txt"
    q.write_text("\n".join(QUERIES) + "\n", encoding="utf-8")
    first = run_cli("augment", "--queries", str(q), "--method", "wordnet", "--variants", "5", "--seed", "1").stdout
    records = [json.loads(line) for line in first.splitlines()]
    assert records == json.loads(json.dumps(augment_queries(QUERIES, "wordnet", seed=1, variants=5)))
    assert [r["query"] for r in records] == QUERIES
    info = records[0]["augmentation"]
    assert info["method"] == "wordnet" and info["seed"] == 1 and info["wordnet"] == "3.0"
    assert info["tagger"] in ("nltk-perceptron", "wordnet-most-frequent-synset")
    changed = 0
    for rec in records:
        group = rec["variants"]
        assert len(group) == 5 and group[0] == rec["query"]
        orig = wordpunct_tokenize(rec["query"])
        for variant in group[1:]:
            words = wordpunct_tokenize(variant)
            assert len(words) == len(orig)
            for a, b in zip(orig, words):
                if a != b:
                    changed += 1
                    synonyms = {n.lower() for s in wordnet.synsets(a) for n in s.lemma_names()}
                    assert b.lower() in synonyms, (a, b)
    assert changed >= 5
    seven = augment_queries(QUERIES, "wordnet", seed=1, variants=7)
    assert [r["variants"][:5] for r in seven] == [r["variants"] for r in records]
    other = augment_queries(QUERIES, "wordnet", seed=2, variants=5)
    assert other[0]["augmentation"]["seed"] == 2
    assert [r["variants"] for r in other] != [r["variants"] for r in records]


def test_missing_wordnet_says_how_to_get_it(tmp_path):
    q = tmp_path / "q.txt"
    q.write_text("hello there\n", encoding="utf-8")
    proc = run_cli("augment", "--queries", str(q), "--wordnet", str(tmp_path), check=False)
    assert proc.returncode == 2
    assert "wordnet-base" in proc.stderr and "Traceback" not in proc.stderr


def test_ctg_augmentation_gives_the_top_beams(tiny_gpt2):
    from cotk_repro_lm.augment import augment_queries

    recs = augment_queries(
        QUERIES[:2], "ctg", model=str(tiny_gpt2), variants=5, histories=["where are you going ?", "what is she doing ?"]
    )
    assert all(len(r["variants"]) == 5 for r in recs)
    assert recs[0]["augmentation"]["method"] == "ctg"
    assert recs == augment_queries(
        QUERIES[:2], "ctg", model=str(tiny_gpt2), variants=5, histories=["where are you going ?", "what is she doing ?"]
    )


def _entropy_bits(group, n):
    grams = Counter(g for s in group for g in zip(*(s.split()[i:] for i in range(n))))
    z = sum(grams.values())
    return -sum(c / z * math.log2(c / z) for c in grams.values())


def test_group_entropy_equals_a_hand_computation(tmp_path):
    groups = [["i am fine .", "i am good .", "fine thanks ."], ["no", "no no", "yes no maybe"]]
    aug = {"method": "wordnet", "seed": 1, "wordnet": "3.0"}
    path = tmp_path / "responses.jsonl"
    path.write_text(
        "".join(
            json.dumps({"query": f"q{i}", "responses": g, "augmentation": aug}) + "\n" for i, g in enumerate(groups)
        ),
        encoding="utf-8",
    )
    res = json.loads(run_cli("evaluate", "--groups", str(path), "-m", "group-entropy", "--json").stdout)
    for n in (1, 2, 3):
        want = sum(_entropy_bits(g, n) for g in groups) / len(groups)
        assert res[f"group-entropy-{n}"] == pytest.approx(want, abs=1e-12)
    lib = get_metric("group-entropy", augmentation=aug).compute_groups(groups)
    assert lib["group-entropy-2 hashvalue"] == res["group-entropy-2 hashvalue"]
    other = get_metric("group-entropy", augmentation={**aug, "seed": 2}).compute_groups(groups)
    assert other["group-entropy-2 hashvalue"] != lib["group-entropy-2 hashvalue"]
    assert "aug:wordnet" in lib["group-entropy-1 signature"]
    flat = run_cli("evaluate", "--groups", str(path), "-m", "distinct", check=False)
    assert flat.returncode == 2 and "not groups: give --hyps FILE" in flat.stderr


def test_correlate_equals_scipy(tmp_path):
    from scipy import stats

    rng = random.Random(7)
    n, raters = 30, 3
    quality = [rng.random() for _ in range(n)]
    scores = [q + rng.gauss(0, 0.2) for q in quality]
    ratings = [[round(1 + 4 * q + rng.gauss(0, 0.5), 2) for _ in range(raters)] for q in quality]
    sp = tmp_path / "scores.jsonl"
    sp.write_text("".join(json.dumps({"id": f"s{i}", "coherence": s}) + "\n" for i, s in enumerate(scores)))
    rp = tmp_path / "human.csv"
    order = list(range(n))
    rng.shuffle(order)  # matched by id, not by position
    rp.write_text("id,r1,r2,r3\n" + "".join(f"s{i}," + ",".join(map(str, ratings[i])) + "\n" for i in order))
    png = tmp_path / "plot.png"
    res = json.loads(
        run_cli("correlate", "--scores", str(sp), "--ratings", str(rp), "--plot", str(png), "--json").stdout
    )
    human = [sum(r) / raters for r in ratings]
    assert res["pearson"] == pytest.approx(stats.pearsonr(scores, human)[0], abs=1e-12)
    assert res["pearson_p"] == pytest.approx(stats.pearsonr(scores, human)[1], rel=1e-9)
    assert res["spearman"] == pytest.approx(stats.spearmanr(scores, human)[0], abs=1e-12)
    loo = []
    for j in range(raters):
        mine = [r[j] for r in ratings]
        others = [(sum(r) - r[j]) / (raters - 1) for r in ratings]
        loo.append(stats.pearsonr(mine, others)[0])
    assert res["inter_rater"]["pearson"] == pytest.approx(sum(loo) / raters, abs=1e-12)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bad = run_cli("correlate", "--scores", str(sp), "--ratings", str(tmp_path / "none.csv"), check=False)
    assert bad.returncode == 2 and "does not exist" in bad.stderr


def _sha(folder):
    return hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()


def test_finetune_lowers_the_loss_and_is_bit_identical(tiny_gpt2, tmp_path):
    from cotk_repro_lm.finetune import finetune

    args = [
        "lm",
        "finetune",
        "--model",
        str(tiny_gpt2),
        "--data",
        str(OPENSUB),
        "--epochs",
        "2",
        "--lr",
        "3e-3",
        "--batch-size",
        "16",
        "--seed",
        "3",
        "--json",
    ]
    first = json.loads(run_cli(*args, "--out", str(tmp_path / "a")).stdout)
    assert first["loss_after"] < first["loss_before"]
    second = finetune(str(tiny_gpt2), OPENSUB, tmp_path / "b", epochs=2, lr=3e-3, batch_size=16, seed=3)
    assert _sha(tmp_path / "a") == _sha(tmp_path / "b")
    assert second["loss_after"] == first["loss_after"]
    res = get_metric("coherence", model=str(tmp_path / "a")).compute(["i am fine ."], queries=["how are you ?"])
    assert res["coherence-raw"] < 0
    busy = run_cli(*args, "--out", str(tmp_path / "a"), check=False)
    assert busy.returncode == 2 and "not empty" in busy.stderr
