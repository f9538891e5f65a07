"""``bertscore`` and ``mauve`` against the reference packages (``bert_score.score``, ``mauve.compute_mauve``) with
tiny random models built here (no hub access): values, batch-size independence, hashes down to the weights,
settings in the hash, bad input, the CLI."""

from __future__ import annotations

import json
import shutil

import pytest
from lm_support import (  # noqa: F401
    MSCOCO,
    OPENSUB,
    _isolated_dirs,
    bpe_json,
    corpus_lines,
    run_cli,
    tiny_bert,
    tiny_gpt2,
    wordpiece_json,
)

torch = pytest.importorskip("torch", reason="torch is not installed")
bert_score = pytest.importorskip("bert_score", reason="bert-score (the reference BERTScore) is not installed")
mauve = pytest.importorskip("mauve", reason="mauve-text (the reference MAUVE) is not installed")

from cotk_repro.metrics import MetricError, get_metric  # noqa: E402

LINES = corpus_lines()
HYPS = LINES[0:120:2][:40]
REFS = [[r, LINES[(7 * i + 300) % len(LINES)]] for i, r in enumerate(LINES[1:120:2][:40])]


def _bump_one_weight(folder):
    from safetensors.torch import load_file, save_file

    weights = folder / "model.safetensors"
    tensors = load_file(str(weights))
    key = sorted(tensors)[0]
    tensors[key] = tensors[key].clone()
    tensors[key].view(-1)[0] += 1e-3
    save_file(tensors, str(weights), metadata={"format": "pt"})


# -- BERTScore -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("num_layers, idf", [(2, False), (3, True), (0, False)])
def test_bertscore_equals_bert_score(tiny_bert, num_layers, idf):
    m = get_metric("bertscore", model=str(tiny_bert), num_layers=num_layers, idf=idf, per_sentence=True)
    ours = m.compute(HYPS, REFS)
    # batch_size=1 in the package: no padded greedy matching, whose padding counts as similarity 0
    P, R, F = bert_score.score(
        HYPS, REFS, model_type=str(tiny_bert), num_layers=num_layers, idf=idf, batch_size=1, nthreads=0, device="cpu"
    )
    for key, ref in (("bertscore-precision", P), ("bertscore-recall", R), ("bertscore", F)):
        assert abs(ours[key] - float(ref.double().mean())) <= 1e-6
        assert max(abs(a - b) for a, b in zip(ours[f"{key} per-sentence"], ref.tolist())) <= 1e-6


def test_bertscore_batched_encoding_equals_sent_encode(tiny_bert):
    m = get_metric("bertscore", model=str(tiny_bert), num_layers=1)
    texts = LINES[:300] + ["", "   ", " padded text  ", "x " * 400]  # empty, blank, stripped, truncated
    expected = [list(bert_score.utils.sent_encode(m.tokenizer, t)) if t.strip() else m.encode(t) for t in texts]
    assert m.encode_many(texts) == expected
    assert len(expected[-1]) == m.tokenizer.model_max_length


def test_bertscore_value_and_hash_do_not_depend_on_batch_size(tiny_bert):
    results = [
        get_metric("bertscore", model=str(tiny_bert), num_layers=2, batch_size=b, per_sentence=True).compute(HYPS, REFS)
        for b in (1, 3, 64)
    ]
    for r in results[1:]:
        assert r["bertscore hashvalue"] == results[0]["bertscore hashvalue"]
        assert (
            max(abs(a - b) for a, b in zip(r["bertscore per-sentence"], results[0]["bertscore per-sentence"])) <= 1e-6
        )


def test_bertscore_rescaled_with_a_baseline_file(tiny_bert, tmp_path):
    baseline = tmp_path / "tiny.tsv"
    baseline.write_text("LAYER,P,R,F\n" + "".join(f"{i},0.{3 + i},0.{2 + i},0.{4 + i}\n" for i in range(4)))
    ours = get_metric(
        "bertscore",
        model=str(tiny_bert),
        num_layers=2,
        rescale_with_baseline=True,
        baseline_path=str(baseline),
        lang="en",
    ).compute(HYPS, REFS)
    P, R, F = bert_score.score(
        HYPS,
        REFS,
        model_type=str(tiny_bert),
        num_layers=2,
        batch_size=1,
        nthreads=0,
        rescale_with_baseline=True,
        baseline_path=str(baseline),
        lang="en",
        device="cpu",
    )
    assert abs(ours["bertscore"] - float(F.double().mean())) <= 1e-6
    assert abs(ours["bertscore-recall"] - float(R.double().mean())) <= 1e-6
    plain = get_metric("bertscore", model=str(tiny_bert), num_layers=2).compute(HYPS, REFS)
    other = tmp_path / "other.tsv"
    other.write_text(baseline.read_text().replace("0.5", "0.51"))
    changed = get_metric(
        "bertscore", model=str(tiny_bert), num_layers=2, rescale_with_baseline=True, baseline_path=str(other)
    ).compute(HYPS, REFS)
    assert len({plain["bertscore hashvalue"], ours["bertscore hashvalue"], changed["bertscore hashvalue"]}) == 3
    assert "rescale:yes" in ours["bertscore signature"]


def test_bertscore_idf_corpus_file(tiny_bert, tmp_path):
    corpus = LINES[500:700]
    (tmp_path / "idf.txt").write_text("\n".join(corpus) + "\n")
    ours = get_metric("bertscore", model=str(tiny_bert), num_layers=2, idf=str(tmp_path / "idf.txt")).compute(
        HYPS, REFS
    )
    idf_dict = bert_score.utils.get_idf_dict(corpus, bert_score.utils.get_tokenizer(str(tiny_bert), False), nthreads=0)
    P, R, F = bert_score.score(
        HYPS, REFS, model_type=str(tiny_bert), num_layers=2, idf=idf_dict, batch_size=1, nthreads=0, device="cpu"
    )
    assert abs(ours["bertscore"] - float(F.double().mean())) <= 1e-6
    (tmp_path / "idf2.txt").write_text("\n".join(corpus[:-1]) + "\n")
    other = get_metric("bertscore", model=str(tiny_bert), num_layers=2, idf=str(tmp_path / "idf2.txt")).compute(
        HYPS, REFS
    )
    refs_idf = get_metric("bertscore", model=str(tiny_bert), num_layers=2, idf=True).compute(HYPS, REFS)
    assert len({ours["bertscore hashvalue"], other["bertscore hashvalue"], refs_idf["bertscore hashvalue"]}) == 3


def test_bertscore_hash_follows_weights_tokenizer_layer_and_references(tiny_bert, tmp_path):
    base = get_metric("bertscore", model=str(tiny_bert), num_layers=2).compute(HYPS[:8], REFS[:8])
    copy = tmp_path / "elsewhere"
    shutil.copytree(tiny_bert, copy)
    same = get_metric("bertscore", model=str(copy), num_layers=2).compute(HYPS[:8], REFS[:8])
    assert same["bertscore hashvalue"] == base["bertscore hashvalue"]  # content, not the path
    assert (
        get_metric("bertscore", model=str(tiny_bert), num_layers=1).compute(HYPS[:8], REFS[:8])["bertscore hashvalue"]
        != base["bertscore hashvalue"]
    )
    refs = [list(r) for r in REFS[:8]]
    refs[0][0] += " too"
    assert (
        get_metric("bertscore", model=str(tiny_bert), num_layers=2).compute(HYPS[:8], refs)["bertscore hashvalue"]
        != base["bertscore hashvalue"]
    )
    _bump_one_weight(copy)
    bumped = get_metric("bertscore", model=str(copy), num_layers=2).compute(HYPS[:8], REFS[:8])
    assert bumped["bertscore hashvalue"] != base["bertscore hashvalue"]
    assert bumped["bertscore signature"] != base["bertscore signature"]  # the signature shows the weights' hash
    tok = tmp_path / "tok"
    shutil.copytree(tiny_bert, tok)
    cfg = json.loads((tok / "tokenizer_config.json").read_text())
    cfg["model_max_length"] = 64
    (tok / "tokenizer_config.json").write_text(json.dumps(cfg))
    assert (
        get_metric("bertscore", model=str(tok), num_layers=2).compute(HYPS[:8], REFS[:8])["bertscore hashvalue"]
        != base["bertscore hashvalue"]
    )


def test_bertscore_bad_input_is_one_sentence(tiny_bert, tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(MetricError, match="holds no model"):
        get_metric("bertscore", model=str(tmp_path / "empty"), num_layers=1)
    with pytest.raises(MetricError, match="beyond the model's depth"):
        get_metric("bertscore", model=str(tiny_bert), num_layers=4)
    with pytest.raises(MetricError, match="needs num_layers"):
        get_metric("bertscore", model=str(tiny_bert))
    twelve = tmp_path / "roberta.tsv"
    twelve.write_text("LAYER,P,R,F\n" + "".join(f"{i},0.8,0.8,0.8\n" for i in range(25)))
    with pytest.raises(MetricError, match="another model"):
        get_metric(
            "bertscore", model=str(tiny_bert), num_layers=2, rescale_with_baseline=True, baseline_path=str(twelve)
        )
    m = get_metric("bertscore", model=str(tiny_bert), num_layers=2)
    with pytest.raises(MetricError, match="2 hypotheses but 1 reference"):
        m.compute(["a", "b"], [["a"]])
    with pytest.raises(MetricError, match="at least one hypothesis"):
        m.compute([], [])


@pytest.mark.slow  # CLI processes that each load torch, transformers and the tiny BERT: ~45 s
def test_bertscore_through_evaluate_and_metrics_listing(tiny_bert, tmp_path):
    (tmp_path / "h.txt").write_text("\n".join(HYPS[:10]) + "\n")
    (tmp_path / "r.txt").write_text("\n".join(r[0] for r in REFS[:10]) + "\n")
    proc = run_cli(
        "evaluate",
        "--hyps",
        str(tmp_path / "h.txt"),
        "--refs",
        str(tmp_path / "r.txt"),
        "-m",
        "bertscore",
        "-o",
        f"bertscore.model={tiny_bert}",
        "-o",
        "bertscore.num_layers=2",
        "--json",
    )
    out = json.loads(proc.stdout)
    P, R, F = bert_score.score(
        HYPS[:10],
        [r[0] for r in REFS[:10]],
        model_type=str(tiny_bert),
        num_layers=2,
        batch_size=1,
        nthreads=0,
        device="cpu",
    )
    assert abs(out["bertscore"] - float(F.double().mean())) <= 1e-6
    assert out["bertscore signature"].startswith("bertscore|model:bert|w:")
    bad = run_cli(
        "evaluate",
        "--hyps",
        str(tmp_path / "h.txt"),
        "--refs",
        str(tmp_path / "r.txt"),
        "-m",
        "bertscore",
        "-o",
        f"bertscore.model={tiny_bert}",
        "-o",
        "bertscore.num_layers=9",
        "--json",
        check=False,
    )
    assert bad.returncode == 2 and "beyond the model's depth" in bad.stderr and bad.stdout == ""
    listing = {m["name"]: m for m in json.loads(run_cli("metrics", "--json").stdout)}
    assert listing["bertscore"]["higher_is_better"] is True and listing["bertscore"]["level"] == "sentence"
    assert {"model", "num_layers", "idf", "rescale_with_baseline", "baseline_path", "batch_size", "lang"} <= {
        o["name"] for o in listing["bertscore"]["options"]
    }
    assert listing["mauve"]["level"] == "corpus" and listing["mauve"]["references"] == "set"
    assert {
        "featurizer",
        "max_text_length",
        "num_buckets",
        "scaling_factor",
        "kmeans_num_redo",
        "kmeans_max_iter",
        "seed",
    } <= {o["name"] for o in listing["mauve"]["options"]}


# -- MAUVE ---------------------------------------------------------------------------------------------------
GEN = LINES[:120]
HUMAN = LINES[400:540]


def test_mauve_equals_compute_mauve_on_features_and_end_to_end(tiny_gpt2):
    m = get_metric("mauve", featurizer=str(tiny_gpt2), num_buckets=4, kmeans_num_redo=2, kmeans_max_iter=100)
    ours = m.compute(GEN, [[h] for h in HUMAN])
    p, q = m.features(HUMAN), m.features(GEN)
    on_features = mauve.compute_mauve(
        p_features=p, q_features=q, num_buckets=4, kmeans_num_redo=2, kmeans_max_iter=100, verbose=False
    )
    assert abs(ours["mauve"] - on_features.mauve) <= 1e-6
    end_to_end = mauve.compute_mauve(
        p_text=HUMAN,
        q_text=GEN,
        featurize_model_name=str(tiny_gpt2),
        num_buckets=4,
        kmeans_num_redo=2,
        kmeans_max_iter=100,
        device_id=-1,
        verbose=False,
    )
    assert abs(ours["mauve"] - end_to_end.mauve) <= 1e-6
    # the package's own (unbatched) features: the same up to float noise
    from mauve.compute_mauve import get_features_from_input

    theirs = get_features_from_input(
        None, None, GEN[:20], str(tiny_gpt2), 1024, -1, name="q", verbose=False, batch_size=1, use_float64=False
    )
    assert abs(theirs - q[:20]).max() <= 1e-5


def test_mauve_settings_and_weights_in_the_hash_not_batch_size(tiny_gpt2, tmp_path):
    def run(folder=tiny_gpt2, **options):
        opts = {"num_buckets": 4, "kmeans_num_redo": 1, "kmeans_max_iter": 50, **options}
        return get_metric("mauve", featurizer=str(folder), **opts).compute(GEN[:60], HUMAN[:60])

    base = run()
    assert run(batch_size=1)["mauve hashvalue"] == base["mauve hashvalue"]
    assert abs(run(batch_size=1)["mauve"] - base["mauve"]) <= 1e-6
    assert run(batch_size=1)["mauve"] == pytest.approx(base["mauve"], abs=1e-6)
    variants = [
        run(seed=3),
        run(num_buckets=5),
        run(scaling_factor=2),
        run(kmeans_num_redo=2),
        run(kmeans_max_iter=60),
        run(max_text_length=8),
    ]
    hashes = {base["mauve hashvalue"]} | {v["mauve hashvalue"] for v in variants}
    assert len(hashes) == 1 + len(variants)
    copy = tmp_path / "gpt2-copy"
    shutil.copytree(tiny_gpt2, copy)
    assert run(copy)["mauve hashvalue"] == base["mauve hashvalue"]
    _bump_one_weight(copy)
    assert run(copy)["mauve hashvalue"] != base["mauve hashvalue"]
    assert (
        run()["mauve hashvalue"]
        == get_metric("mauve", featurizer=str(tiny_gpt2), num_buckets=4, kmeans_num_redo=1, kmeans_max_iter=50).compute(
            GEN[:60], HUMAN[:60][::-1]
        )["mauve hashvalue"]
    )  # human texts are a set


@pytest.mark.slow  # CLI processes that each load torch, transformers and MAUVE's featurizer: ~50 s
def test_mauve_bad_input(tiny_gpt2, tmp_path):
    with pytest.raises(MetricError, match=r"fewer|at least as many texts as clusters"):
        get_metric("mauve", featurizer=str(tiny_gpt2), num_buckets=10).compute(GEN[:5], HUMAN[:50])
    with pytest.raises(MetricError, match="needs a featurizer"):
        get_metric("mauve")
    (tmp_path / "nothing").mkdir()
    with pytest.raises(MetricError, match="holds no model"):
        get_metric("mauve", featurizer=str(tmp_path / "nothing"))
    with pytest.raises(MetricError, match="empty"):
        get_metric("mauve", featurizer=str(tiny_gpt2), num_buckets=2).compute(["a", ""], ["b", "c"])
    (tmp_path / "h.txt").write_text("\n".join(GEN[:30]) + "\n")
    (tmp_path / "r.txt").write_text("\n".join(HUMAN[:45]) + "\n")  # a set of another size is fine
    proc = run_cli(
        "evaluate",
        "--hyps",
        str(tmp_path / "h.txt"),
        "--refs",
        str(tmp_path / "r.txt"),
        "-m",
        "mauve",
        "-o",
        f"mauve.featurizer={tiny_gpt2}",
        "-o",
        "mauve.max_text_length=32",
        "-o",
        "mauve.num_buckets=3",
        "--json",
    )
    out = json.loads(proc.stdout)
    m = get_metric("mauve", featurizer=str(tiny_gpt2), max_text_length=32, num_buckets=3)
    assert out["mauve"] == pytest.approx(m.compute(GEN[:30], HUMAN[:45])["mauve"], abs=1e-6)
    bad = run_cli(
        "evaluate",
        "--hyps",
        str(tmp_path / "h.txt"),
        "--refs",
        str(tmp_path / "r.txt"),
        "-m",
        "mauve",
        "-o",
        f"mauve.featurizer={tiny_gpt2}",
        "-o",
        "mauve.num_buckets=40",
        "--json",
        check=False,
    )
    assert bad.returncode == 2 and "clusters" in bad.stderr and bad.stdout == ""
