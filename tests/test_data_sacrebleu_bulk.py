"""The bulk paths for sacrebleu's ``intl`` and ``zh`` (cotk_repro.data.sacrebleu_bulk) give exactly the tokens of
sacrebleu's own tokenizer called line by line (as sacrebleu's BLEU calls it: ``tokenizer(line.rstrip())``), on the
benchmark's corpora of every script and on random Unicode lines built to hit the rules' edges."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
from sacrebleu.metrics.bleu import BLEU
from sacrebleu.tokenizers import tokenizer_zh

from cotk_repro.data import sacrebleu_bulk
from cotk_repro.data.sacrebleu_tokenizers import SacrebleuTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from bleu_tokenizers import POOLS, corpus

# the rules' edges: ASCII punctuation and digits (13a's rules), '-', '.', ',', spaces of several kinds, Chinese
# characters and full-width forms, general punctuation (inside one of sacrebleu's odd ranges), symbols, numbers of
# other scripts, combining marks, two of the separator's private-use marks
EDGES = list(".,-0123456789 !\"#$%&'()*+/:;<=>?@[\\]^_`{|}~aZé") + [
    "\t",
    "\u3000",
    "\u00a0",
    "\u2028",
    "\x1c",
    "中",
    "文",
    "，",
    "。",
    "：",
    "“",
    "”",
    "\u2000",
    "\u2001",
    "\u2a6d",
    "\u2a6e",
    "½",
    "²",
    "٣",
    "€",
    "👍",
    "\u0301",
    "\ue000",
    "\ue001",
    "ภ",
    "न",
    "\u20000"[0],
]


def _random_lines(rng: random.Random, n: int) -> list[str]:
    lines = []
    for _ in range(n):
        pool = EDGES if rng.random() < 0.8 else [chr(rng.randrange(0x20, 0x30000)) for _ in range(20)]
        lines.append("".join(rng.choice(pool) for _ in range(rng.randint(0, 12))))
    return lines


def _sacrebleu_tokens(name: str, lines: list[str]) -> list[list[str]]:
    tok = BLEU(tokenize=name).tokenizer
    return [tok(line.rstrip()).split() for line in lines]


@pytest.mark.parametrize("name", ["intl", "zh"])
def test_bulk_equals_sacrebleu_line_by_line(name):
    tok = SacrebleuTokenizer(name)
    assert tok._bulk is not None  # the bulk path is the one under test
    cases = [corpus(kind, 2000, seed) for kind in POOLS for seed in (1, 2)]
    rng = random.Random(33)
    cases += [_random_lines(rng, 3000) for _ in range(6)]
    cases += [["", " ", ".", "5.", ".5", "-1", "a.", ",b", "\ue000 \ue001 \ue002 \uf8ff"], ["x\ny", "0 \ue000 0"], []]
    for lines in cases:
        assert tok.tokenize_many(lines) == _sacrebleu_tokens(name, lines)
        joined = "".join(lines)
        if name == "intl" and lines and "\n" not in joined and any(m not in joined for m in sacrebleu_bulk.INTL_MARKS):
            # one call on the joined text, never sacrebleu's per-line call
            cached = type(tok._tok).__call__
            cached.cache_clear()
            out = tok._bulk(lines)
            info = cached.cache_info()
            assert info.hits + info.misses == 0  # sacrebleu's line-by-line call never used
            assert out == _sacrebleu_tokens(name, lines)
        assert [tok.tokenize(line) for line in lines[:50]] == _sacrebleu_tokens(name, lines[:50])


def test_chinese_class_is_sacrebleus_predicate():
    """The character class built from sacrebleu's ranges accepts exactly what ``_is_chinese_char`` accepts: every
    code point up to U+30000 (past the last range) and a sample of the rest."""
    cls = sacrebleu_bulk._chinese_class(tuple(tokenizer_zh._UCODE_RANGES))
    cps = list(range(0x30000)) + random.Random(5).sample(range(0x30000, 0x110000), 5000)
    ours = [bool(cls.fullmatch(chr(cp))) for cp in cps]
    assert ours == [tokenizer_zh.TokenizerZh._is_chinese_char(chr(cp)) for cp in cps]


def test_unknown_rules_fall_back_to_sacrebleu_line_by_line():
    """A tokenizer whose rules are not the ones the bulk paths were proven for gets no bulk path."""

    class Other:
        _re = ((type("P", (), {"pattern": "x"})(), "y"),)

    assert sacrebleu_bulk.bulk(Other()) is None
    assert sacrebleu_bulk.bulk(BLEU(tokenize="13a").tokenizer) is None
    assert SacrebleuTokenizer("char")._bulk is None
