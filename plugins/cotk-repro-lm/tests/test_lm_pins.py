"""The published hash and signature of fluency, coherence, bertscore and mauve, pinned on small fixed inputs.

The tiny models are built here from seeds and the fixture corpus (``lm_support``, weights drawn without torch's
CPU kernels), so their weight digests, and the hashes over them, are the same on every run and every machine.
The values in ``lm_pins.json`` were produced by the code before these metrics declared their settings once
(:mod:`cotk_repro.metrics.declaration`); its ``_changes`` says what changed since, and why. Regenerate only for
a deliberate, versioned change: ``python3 plugins/cotk-repro-lm/tests/test_lm_pins.py``.

Hashes compare exactly. A signature compares exactly but for a field that shows a value the computation
produced (the computed lower bound's ``bound:``, declared ``COMPUTED_VALUE``): its last digits move with torch's
CPU kernels, so it compares within 1e-5 relative.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from lm_support import corpus_lines, make_bert, make_gpt2, train_bpe

PINS = Path(__file__).parent / "lm_pins.json"
#: the signature fields that show a computed value, per case
COMPUTED_FIELDS = {"coherence-reference": {"bound"}, "fluency-self": {"bound"}}


def fixed_wordpiece(out: Path) -> Path:
    """A WordPiece over the fixture corpus' words, in sorted order: the same file on every run (a trained one is
    not: tokenizers' WordPiece trainer breaks ties differently from run to run)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers

    words = sorted({w for line in corpus_lines() for w in line.split()})
    chars = sorted({c for w in words for c in w})
    vocab = {
        t: i
        for i, t in enumerate(
            ["[UNK]", "[CLS]", "[SEP]", "[PAD]", *chars, *(f"##{c}" for c in chars), *(w for w in words if len(w) > 1)]
        )
    }
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    out.mkdir(parents=True, exist_ok=True)
    tok.save(str(out / "tokenizer.json"))
    return out / "tokenizer.json"


def entries(folder: Path) -> dict[str, dict[str, list[Any]]]:
    """``{case: {key: [hash, signature]}}`` of every case, the models built under ``folder``."""
    from cotk_repro.metrics import get_metric

    gpt2 = make_gpt2(folder / "gpt2", seed=0, tokenizer_json=train_bpe(folder / "bpe"))
    bert = make_bert(folder / "bert", seed=0, tokenizer_json=fixed_wordpiece(folder / "wordpiece"))
    lines = corpus_lines()
    hyps, queries, human = lines[0:40:2], lines[1:40:2], lines[40:80:2]
    refs = [[r, lines[(7 * i + 300) % len(lines)]] for i, r in enumerate(lines[41:81:2])]
    results = {
        "fluency": get_metric("fluency", model=str(gpt2)).compute(hyps),
        "fluency-self": get_metric("fluency", model=str(gpt2), normalize="self").compute(hyps),
        "fluency-given": get_metric("fluency", model=str(gpt2), lower_bound=-9.5, lower_bound_from="paper").compute(
            hyps
        ),
        "coherence-reference": get_metric("coherence", model=str(gpt2), reference=human).compute(hyps, queries=queries),
        "bertscore": get_metric("bertscore", model=str(bert), num_layers=2).compute(hyps, refs),
        "bertscore-idf": get_metric("bertscore", model=str(bert), num_layers=1, idf=True).compute(hyps, refs),
        "mauve": get_metric(
            "mauve", featurizer=str(gpt2), num_buckets=4, kmeans_num_redo=1, kmeans_max_iter=50
        ).compute(hyps, [[h] for h in human]),
    }
    out = {}
    for case, result in results.items():
        out[case] = {
            k: [result.get(k + " hashvalue"), result.get(k + " signature")]
            for k, v in result.items()
            if isinstance(v, float)
        }
    return out


def pinned() -> dict[str, Any]:
    """The pins, without the ``_changes`` note."""
    pins = json.loads(PINS.read_text(encoding="utf-8"))
    pins.pop("_changes")
    return pins


def same_signature(got: str, pin: str, computed: set[str]) -> bool:
    """``got`` equals ``pin`` field by field; a ``computed`` field's number within 1e-5 relative."""
    a, b = got.split("|"), pin.split("|")
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        kx, _, vx = x.partition(":")
        ky, _, vy = y.partition(":")
        if kx in computed and kx == ky:
            if not math.isclose(float(vx), float(vy), rel_tol=1e-5):
                return False
        elif x != y:
            return False
    return True


def test_lm_hashes_and_signatures_are_unchanged(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("mauve")
    got, pins = entries(tmp_path), pinned()
    assert {c: sorted(v) for c, v in got.items()} == {c: sorted(v) for c, v in pins.items()}
    for case, keys in pins.items():
        for key, (hash_pin, signature_pin) in keys.items():
            hash_got, signature_got = got[case][key]
            assert hash_got == hash_pin, (case, key)
            assert same_signature(signature_got, signature_pin, COMPUTED_FIELDS.get(case, set())), (
                case,
                signature_got,
                signature_pin,
            )


def test_a_computed_field_alone_compares_within_tolerance() -> None:
    pin = "coherence|model:abc|n:20|bound:-6.005914|v:1"
    assert same_signature("coherence|model:abc|n:20|bound:-6.005911|v:1", pin, {"bound"})
    assert not same_signature("coherence|model:abc|n:20|bound:-6.1|v:1", pin, {"bound"})
    assert not same_signature("coherence|model:abd|n:20|bound:-6.005914|v:1", pin, {"bound"})
    assert not same_signature("coherence|model:abc|n:20|bound:-6.005911|v:1", pin, set())


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    changes = json.loads(PINS.read_text(encoding="utf-8")).get("_changes", []) if PINS.exists() else []
    with tempfile.TemporaryDirectory() as tmp:
        fresh = {"_changes": changes, **entries(Path(tmp))}  # add a line to _changes saying why
        PINS.write_text(json.dumps(fresh, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    sys.stdout.write(PINS.read_text(encoding="utf-8"))
