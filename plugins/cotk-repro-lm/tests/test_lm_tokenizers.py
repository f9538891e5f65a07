"""hf:NAME_OR_PATH tokenizers in the loaders and evaluate, and the CoTK paper's Table 9: BLEU stays comparable."""

from __future__ import annotations

import json
import shutil

import pytest

# fixtures are imported by name (no conftest.py: see lm_support)
from lm_support import (  # noqa: F401
    MSCOCO,
    _isolated_dirs,
    bpe_json,
    run_cli,
    wordpiece_json,
)

pytest.importorskip("tokenizers", reason="the tokenizers library is not installed")
pytest.importorskip(
    "cotk_repro_lm", reason="the cotk-repro-lm plugin is not installed (pip install -e plugins/cotk-repro-lm)"
)

from cotk_repro import data
from cotk_repro.metrics import get_metric


def test_hf_tokenizer_tokenizes_and_decodes(bpe_json, wordpiece_json):
    from tokenizers import Tokenizer

    bpe = data.get_tokenizer(f"hf:{bpe_json}")
    text = "A black honda motorcycle parked in front of a garage."
    assert bpe.tokenize(text) == Tokenizer.from_file(str(bpe_json)).encode(text).tokens
    assert bpe.detokenize(bpe.tokenize(text)) == text  # byte-level BPE is lossless
    assert bpe.tokenize_many([text, "two"]) == [bpe.tokenize(text), bpe.tokenize("two")]
    wp = data.get_tokenizer(f"hf:{wordpiece_json.parent}")  # a folder with a tokenizer.json
    assert any(t.startswith("##") for t in wp.tokenize("motorcycles parked beneath umbrellas"))
    assert wp.detokenize(wp.tokenize(text)) == text


def test_identity_is_the_files_not_the_path(bpe_json, tmp_path):
    other = tmp_path / "elsewhere.json"
    shutil.copy(bpe_json, other)
    a, b = data.get_tokenizer(f"hf:{bpe_json}"), data.get_tokenizer(f"hf:{other}")
    assert a.settings == b.settings
    assert str(tmp_path) not in json.dumps(b.settings)
    obj = json.loads(other.read_text(encoding="utf-8"))
    obj["model"]["vocab"]["zzzz"] = len(obj["model"]["vocab"])
    other.write_text(json.dumps(obj), encoding="utf-8")
    assert data.get_tokenizer(f"hf:{other}").settings != a.settings


def test_unknown_and_missing_tokenizers_are_clear_errors(tmp_path):
    from cotk_repro.errors import CotkError

    with pytest.raises(CotkError, match=r"unknown tokenizer 'nope'.*hf:ARG"):
        data.get_tokenizer("nope")
    with pytest.raises(CotkError, match="needs an argument"):
        data.get_tokenizer("hf:")
    with pytest.raises(CotkError, match="holds no tokenizer files"):
        data.get_tokenizer(f"hf:{tmp_path}")
    proc = run_cli("data", "hashes", str(MSCOCO), "-t", f"hf:{tmp_path / 'none.json'}", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def _coco(tok):
    return data.load(
        "language-generation", MSCOCO, tokenizer=tok, min_frequent_vocab_times=1, splits=["train", "dev", "test"]
    )


def test_table9_bleu_is_comparable_across_tokenizers(bpe_json, wordpiece_json):
    """One fixed set of hypotheses against the test split loaded with four tokenizers: one BLEU hash and one
    value; the perplexity hash (over the tokens) differs per tokenizer."""
    hyps = (MSCOCO / "mscoco_dev.txt").read_text(encoding="utf-8").splitlines()
    names = ["nltk", "punkt", f"hf:{bpe_json}", f"hf:{wordpiece_json}"]
    bleu, ppl_hashes, general = {}, {}, {}
    for name in names:
        dl = _coco(name)
        refs = [[dl.convert_tokens_to_sentence(s)] for s in dl.sentences("test")]
        res = get_metric("bleu").compute(hyps, refs)
        bleu[name] = (res["bleu"], res["bleu hashvalue"])
        ref_hashes = dl.reference_hashes("test")
        assert ref_hashes["bleu"] == res["bleu hashvalue"]
        ppl_hashes[name] = ref_hashes["perplexity"]
        general[name] = dl.hash_codes["general"]
    values = {v for v, _ in bleu.values()}
    assert len({h for _, h in bleu.values()}) == 1
    assert max(values) - min(values) < 1e-12
    # the perplexity hash covers the tokens: punkt splits these captions exactly as nltk (no abbreviation
    # in them), the subword tokenizers differently
    assert ppl_hashes["punkt"] == ppl_hashes["nltk"]
    assert len({ppl_hashes[n] for n in names if n != "punkt"}) == 3
    assert len(set(general.values())) == len(names)


def test_cli_data_hashes_and_evaluate_accept_hf(bpe_json, tmp_path):
    out = json.loads(
        run_cli(
            "data", "hashes", str(MSCOCO), "-t", f"hf:{bpe_json}", "--min-frequent-vocab-times", "1", "--json"
        ).stdout
    )
    assert out["tokenizer"] == f"hf:{bpe_json}"
    assert out["hash_codes"]["setting"] == _coco(f"hf:{bpe_json}").hash_codes["setting"]
    hyps = tmp_path / "h.txt"
    hyps.write_text("a man rides a horse\na dog runs on the beach\n", encoding="utf-8")
    res = json.loads(
        run_cli("evaluate", "--hyps", str(hyps), "-m", "distinct", "-t", f"hf:{bpe_json}", "--json").stdout
    )
    toks = data.get_tokenizer(f"hf:{bpe_json}").tokenize_many(hyps.read_text().splitlines())
    unigrams = [t for s in toks for t in s]
    assert res["distinct-1"] == pytest.approx(len(set(unigrams)) / len(unigrams))
