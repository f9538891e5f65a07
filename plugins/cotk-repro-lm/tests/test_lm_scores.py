"""coherence and fluency against a direct, unbatched transformers computation; hashes; normalization."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys

import pytest

# fixtures are imported by name (no conftest.py: see lm_support)
from lm_support import (  # noqa: F401
    OPENSUB,
    REPO_ROOT,
    _isolated_dirs,
    bpe_json,
    run_cli,
    tiny_gpt2,
)

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch==2.13.0)")
pytest.importorskip(
    "cotk_repro_lm", reason="the cotk-repro-lm plugin is not installed (pip install -e plugins/cotk-repro-lm)"
)

from cotk_repro.metrics import MetricError, get_metric  # noqa: E402

N = 40


def _lines(name: str) -> list[str]:
    return (OPENSUB / name).read_text(encoding="utf-8").splitlines()[:N]


QUERIES = _lines("opensub_pair_test.post")
RESPONSES = _lines("opensub_pair_test.response")


def direct_raw(model_dir, responses, queries=None) -> list[float]:
    """(1/|r|) log P(r [| q]) one sentence at a time, straight from transformers (no padding, no batching)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    out = []
    for i, r in enumerate(responses):
        r_ids = tok(r, add_special_tokens=False)["input_ids"]
        prefix = [tok.bos_token_id]
        if queries is not None:
            prefix += tok(queries[i], add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        ids = torch.tensor([prefix + r_ids])
        with torch.no_grad():
            logp = torch.log_softmax(model(ids).logits[0].double(), -1)
        total = sum(float(logp[len(prefix) + t - 1, r_ids[t]]) for t in range(len(r_ids)))
        out.append(total / len(r_ids))
    return out


@pytest.fixture(scope="module")
def direct(tiny_gpt2):
    return {"fluency": direct_raw(tiny_gpt2, RESPONSES), "coherence": direct_raw(tiny_gpt2, RESPONSES, QUERIES)}


def test_plugin_registers_through_the_hooks():
    from cotk_repro.plugins import get_plugins

    plugins = get_plugins()
    for name in ("coherence", "fluency", "group-entropy"):
        assert plugins.registry("metric")[name].plugin == "cotk-repro-lm"
    assert plugins.registry("tokenizer")["hf:"].plugin == "cotk-repro-lm"


def test_core_and_help_do_not_import_torch():
    code = (
        "import sys\nfrom cotk_repro.plugins import get_plugins\np = get_plugins()\n"
        "[p.registry(k) for k in ('metric', 'tokenizer')]\nfrom cotk_repro.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "assert 'cotk-repro-lm' in p.infos, sorted(p.infos)\n"
        "print('TORCH' if 'torch' in sys.modules or 'transformers' in sys.modules else 'CLEAN')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("CLEAN")


@pytest.mark.parametrize("padding_side", ["right", "left"])
@pytest.mark.parametrize("batch_size", [1, 7, 64])
@pytest.mark.parametrize("name", ["fluency", "coherence"])
def test_scores_equal_an_unbatched_computation(tiny_gpt2, direct, name, batch_size, padding_side):
    m = get_metric(name, model=str(tiny_gpt2), batch_size=batch_size, padding_side=padding_side, per_sentence=True)
    res = m.compute(RESPONSES, queries=QUERIES if name == "coherence" else None)
    got = res[f"{name}-raw per-sentence"]
    assert len(got) == N
    for a, b in zip(got, direct[name]):
        assert a == pytest.approx(b, abs=1e-5)
    assert res[f"{name}-raw"] == pytest.approx(sum(direct[name]) / N, abs=1e-5)
    assert name not in res  # no declared lower bound: raw only
    assert direct["coherence"] != direct["fluency"]


def test_hash_is_independent_of_batching_and_follows_the_weights(tiny_gpt2, tmp_path):
    a = get_metric("fluency", model=str(tiny_gpt2), batch_size=3).compute(RESPONSES[:10])
    b = get_metric("fluency", model=str(tiny_gpt2), batch_size=10, padding_side="left").compute(RESPONSES[:10])
    assert a["fluency-raw hashvalue"] == b["fluency-raw hashvalue"]
    copy = tmp_path / "copy"
    shutil.copytree(tiny_gpt2, copy)
    c = get_metric("fluency", model=str(copy)).compute(RESPONSES[:10])
    assert c["fluency-raw hashvalue"] == a["fluency-raw hashvalue"]  # the same files elsewhere: same hash
    from safetensors.torch import load_file, save_file

    weights = copy / "model.safetensors"
    tensors = load_file(str(weights))
    key = sorted(tensors)[0]
    tensors[key] = tensors[key].clone()
    tensors[key].view(-1)[0] += 1e-3
    save_file(tensors, str(weights), metadata={"format": "pt"})
    d = get_metric("fluency", model=str(copy)).compute(RESPONSES[:10])
    assert d["fluency-raw hashvalue"] != a["fluency-raw hashvalue"]
    assert d["fluency-raw signature"] != a["fluency-raw signature"]


def test_normalization_with_a_reference_set(tiny_gpt2, direct, tmp_path):
    import numpy as np

    human = tmp_path / "human.txt"
    human.write_text("\n".join(RESPONSES) + "\n", encoding="utf-8")
    res = get_metric("coherence", model=str(tiny_gpt2), reference=str(human), per_sentence=True).compute(
        RESPONSES, queries=QUERIES
    )
    bound = float(np.percentile(direct["coherence"], 5))
    want = [(max(bound, s) - bound) / (-bound) for s in direct["coherence"]]
    for a, b in zip(res["coherence per-sentence"], want):
        assert a == pytest.approx(b, abs=1e-5)
    assert res["coherence"] == pytest.approx(sum(want) / N, abs=1e-5)
    assert min(res["coherence per-sentence"]) == 0.0  # clipped below the 5th percentile
    assert "ref(human.txt,p5)" in res["coherence signature"]
    # the same bound given explicitly gives the same values; a different source a different hash
    given = get_metric(
        "coherence", model=str(tiny_gpt2), lower_bound=bound, lower_bound_from="human.txt", per_sentence=True
    ).compute(RESPONSES, queries=QUERIES)
    assert given["coherence"] == pytest.approx(res["coherence"], abs=1e-5)
    assert given["coherence hashvalue"] != res["coherence hashvalue"]
    assert given["coherence-raw hashvalue"] == res["coherence-raw hashvalue"]
    own = get_metric("coherence", model=str(tiny_gpt2), normalize="self").compute(RESPONSES[:20], queries=QUERIES[:20])
    assert "self(p5)" in own["coherence signature"]


def test_normalized_is_zero_at_the_bound_and_clipped_below():
    from cotk_repro_lm.metrics import normalized, percentile_bound

    assert normalized(-4.0, -4.0) == 0.0
    assert normalized(-9.0, -4.0) == 0.0
    assert normalized(-1.0, -4.0) == pytest.approx(0.75)
    assert normalized(0.0, -4.0) == 1.0
    assert percentile_bound([-1.0, -2.0, -3.0, -4.0, -5.0]) == pytest.approx(-4.8)


def test_streaming_forward_close_equals_compute(tiny_gpt2):
    m = get_metric("coherence", model=str(tiny_gpt2), lower_bound=-8.0)
    for i in range(0, 20, 6):
        m.forward({"hyps": RESPONSES[i : min(i + 6, 20)], "queries": QUERIES[i : min(i + 6, 20)]})
    streamed = m.close()
    whole = get_metric("coherence", model=str(tiny_gpt2), lower_bound=-8.0).compute(
        RESPONSES[:20], queries=QUERIES[:20]
    )
    assert streamed == whole


def test_metric_errors_are_one_sentence(tiny_gpt2, tmp_path):
    with pytest.raises(MetricError, match=r"fluency.model=DIR"):
        get_metric("fluency")
    with pytest.raises(MetricError, match="does not exist"):
        get_metric("fluency", model=str(tmp_path / "nope"))
    with pytest.raises(MetricError, match="needs the query"):
        get_metric("coherence", model=str(tiny_gpt2)).compute(["a b"])
    with pytest.raises(MetricError, match="empty"):
        get_metric("fluency", model=str(tiny_gpt2)).compute(["fine", ""])
    with pytest.raises(MetricError, match="normalize"):
        get_metric("fluency", model=str(tiny_gpt2), normalize="best")


def test_evaluate_command_with_queries_and_per_sentence(tiny_gpt2, direct, tmp_path):
    q, r = tmp_path / "q.txt", tmp_path / "r.txt"
    q.write_text("\n".join(QUERIES) + "\n", encoding="utf-8")
    r.write_text("\n".join(RESPONSES) + "\n", encoding="utf-8")
    proc = run_cli(
        "evaluate",
        "--queries",
        str(q),
        "--hyps",
        str(r),
        "-m",
        "coherence",
        "-o",
        f"coherence.model={tiny_gpt2}",
        "-o",
        f"coherence.reference={r}",
        "-m",
        "fluency",
        "-o",
        f"fluency.model={tiny_gpt2}",
        "--per-sentence",
        "--batch-size",
        "5",
        "--json",
    )
    res = json.loads(proc.stdout)
    assert res["coherence-raw"] == pytest.approx(sum(direct["coherence"]) / N, abs=1e-5)
    assert res["fluency-raw"] == pytest.approx(sum(direct["fluency"]) / N, abs=1e-5)
    assert len(res["fluency-raw per-sentence"]) == N
    assert 0.0 <= res["coherence"] <= 1.0
    no_q = run_cli("evaluate", "--hyps", str(r), "-m", "coherence", "-o", f"coherence.model={tiny_gpt2}", check=False)
    assert no_q.returncode == 2 and "--queries FILE" in no_q.stderr and "Traceback" not in no_q.stderr
    no_model = run_cli("evaluate", "--hyps", str(r), "-m", "fluency", check=False)
    assert no_model.returncode == 2 and "fluency.model=DIR" in no_model.stderr
    assert not math.isnan(res["coherence"])


def test_evaluate_table_shows_averages_not_per_sentence_lists():
    from cotk_repro.cli.evaluate_cmd import result_rows

    rows = result_rows(
        {
            "fluency-raw": -3.5,
            "fluency-raw hashvalue": "ab" * 32,
            "fluency-raw signature": "s",
            "fluency-raw per-sentence": [-3.0, -4.0],
        }
    )
    assert [r[0] for r in rows] == ["fluency-raw"]
