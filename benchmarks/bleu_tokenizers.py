"""Benchmark: the BLEU family's tokenizers beside their references, on the same text, in the same run.

    python3 benchmarks/bleu_tokenizers.py [--lines 10000] [--repeat 3] [--json FILE]

The tokenizers are sacrebleu's own objects in both columns. For ``13a`` and ``char`` the tokenizing (most of either
side's time) is the same calls, line by line, and the difference is the counting; ``intl`` and ``zh`` are called in
bulk on our side (cotk_repro/data/sacrebleu_bulk.py: one call of sacrebleu's ``intl`` on the joined lines, ``zh``'s
post-tokenizer on the runs between Chinese characters only), tested token for token against the line-by-line calls. Synthetic corpora (seeded; word pools of each script, 5-25 words a line): Hindi, Chinese, mixed-script (Hindi,
Chinese, Thai, Latin with accents, emoji, subscripts) and English.

1. WordPunct (``nltk``, the default): tokens/s of the bulk path (:func:`cotk_repro.core.wordpunct.tokenize_many`)
   beside NLTK's ``WordPunctTokenizer().tokenize`` line by line; the tokens are checked equal. Target (issue 33):
   >= 3x NLTK on Hindi, Chinese and mixed text; English (ASCII) stays on its numpy path.
2. sacrebleu's tokenizers (``zh``, ``intl``, ``char``, ``13a``; ``ja-mecab`` on Japanese): corpus BLEU, text in,
   with ``-o bleu.tokenizer=NAME -o bleu.denominators=sacrebleu`` (tokenization, counting and the hash) beside ``sacrebleu.corpus_bleu(...,
   tokenize=NAME)`` on the same lines; values checked equal to 1e-12. Target: ``zh``/``intl``/``char`` >= 2x
   sacrebleu. Each tool gets fresh tokenizer objects per run (sacrebleu's line caches start empty), best of
   ``--repeat``.

Timings: wall-clock and CPU time of this process (``time.process_time``; steadier than wall-clock on a loaded
machine), each the best of ``--repeat``, both tools one after the other in the same run; the load average is printed
at the start and the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

POOLS = {
    "hindi": "नमस्ते दुनिया यह एक किताब है मैं घर जाता हूँ पानी ठंडा और गरम क्या , । ?".split(),
    "chinese": "我们 今天 去 公园 玩 ， 天气 很好 。 他说 ： “ 你好 ！ ” 中文 测试 句子 学生 老师".split(),
    "japanese": "日本語 の テキスト です 。 今日 は 天気 が いい 私 学生 東京 に 行き ます ね".split(),
}
POOLS["mixed"] = POOLS["hindi"] + POOLS["chinese"] + "hello world , ok ! café H₂O 👍🏽 ภาษาไทย résumé".split()
POOLS["english"] = "the cat sat on a mat . it was n't happy , but the dog ran away ! yes $5 don't".split()


def corpus(kind: str, lines: int, seed: int) -> list[str]:
    rng = random.Random(f"{kind}-{seed}")
    joiner = "" if kind in ("chinese", "japanese") else " "
    return [joiner.join(rng.choice(POOLS[kind]) for _ in range(rng.randint(5, 25))) for _ in range(lines)]


def best(fn, repeat: int) -> tuple[float, object, float]:
    """(best wall-clock seconds, the result, best CPU seconds) of ``repeat`` runs of ``fn``."""
    out, times, cpu = None, [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return min(times), out, min(cpu)


def wordpunct_section(lines: int, repeat: int) -> list[dict]:
    from nltk.tokenize import WordPunctTokenizer

    from cotk_repro.core import wordpunct

    rows = []
    for kind in ("hindi", "chinese", "mixed", "english"):
        texts = corpus(kind, lines, 1)
        wordpunct.tokenize_many(texts[:10])  # imports and compiles, outside the timing
        ours_s, ours, ours_cpu = best(lambda texts=texts: wordpunct.tokenize_many(texts), repeat)
        nltk_tok = WordPunctTokenizer()
        nltk_s, theirs, nltk_cpu = best(lambda tok=nltk_tok, texts=texts: [tok.tokenize(t) for t in texts], repeat)
        assert ours == theirs, kind
        tokens = sum(map(len, ours))
        rows.append(
            {
                "corpus": kind,
                "tokens": tokens,
                "ours_s": ours_s,
                "nltk_s": nltk_s,
                "ours_tok_per_s": tokens / ours_s,
                "nltk_tok_per_s": tokens / nltk_s,
                "speedup": nltk_s / ours_s,
                "ours_cpu_s": ours_cpu,
                "nltk_cpu_s": nltk_cpu,
                "cpu_speedup": nltk_cpu / ours_cpu,
            }
        )
    return rows


def sacrebleu_section(lines: int, repeat: int) -> list[dict]:
    import logging

    import sacrebleu

    from cotk_repro.metrics import get_metric

    logging.getLogger("sacrebleu").setLevel(logging.ERROR)  # its "forgot to detokenize" notes on " ." endings
    rows = []
    cases = [("chinese", t) for t in ("zh", "char", "intl", "13a")] + [("mixed", t) for t in ("intl", "char", "13a")]
    cases += [("english", t) for t in ("13a", "intl")] + [("japanese", "ja-mecab")]
    for kind, name in cases:
        hyps, refs = corpus(kind, lines, 1), corpus(kind, lines, 2)
        try:
            get_metric("bleu", tokenizer=name)
        except Exception as exc:  # a mecab tokenizer without its optional dependencies
            print(f"  {kind:9} {name:9} skipped: {exc}")
            continue

        def ours_once(name=name, hyps=hyps, refs=refs):  # a new metric each time; sacrebleu's totals
            return get_metric("bleu", tokenizer=name, denominators="sacrebleu").compute(hyps, [[r] for r in refs])

        ours_s, ours, ours_cpu = best(ours_once, repeat)
        sb_s, theirs, sb_cpu = best(
            lambda hyps=hyps, refs=refs, name=name: sacrebleu.corpus_bleu(hyps, [refs], tokenize=name), repeat
        )
        equal = abs(ours["bleu"] - theirs.score / 100) <= 1e-12
        rows.append(
            {
                "corpus": kind,
                "tokenizer": name,
                "ours_s": ours_s,
                "sacrebleu_s": sb_s,
                "speedup": sb_s / ours_s,
                "bleu": ours["bleu"],
                "sacrebleu": theirs.score / 100,
                "equal": equal,
                "ours_cpu_s": ours_cpu,
                "sacrebleu_cpu_s": sb_cpu,
                "cpu_speedup": sb_cpu / ours_cpu,
            }
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    print(f"(load average at the start {'/'.join(f'{x:.1f}' for x in os.getloadavg())})")
    print(f"WordPunct, {args.lines:,} lines (best of {args.repeat})")
    print(f"  {'corpus':9} {'tokens':>9} {'ours tok/s':>12} {'NLTK tok/s':>12} {'x NLTK':>7} {'x (CPU)':>8}")
    wp = wordpunct_section(args.lines, args.repeat)
    for r in wp:
        print(
            f"  {r['corpus']:9} {r['tokens']:>9,} {r['ours_tok_per_s']:>12,.0f} {r['nltk_tok_per_s']:>12,.0f} "
            f"{r['speedup']:>6.1f}x {r['cpu_speedup']:>7.1f}x"
        )
    print(f"\nCorpus BLEU, text in, {args.lines:,} lines (best of {args.repeat})")
    print(f"  {'corpus':9} {'tokenizer':9} {'ours s':>8} {'sacrebleu s':>12} {'x sacrebleu':>12} {'x (CPU)':>8}  equal")
    sb = sacrebleu_section(args.lines, args.repeat)
    for r in sb:
        print(
            f"  {r['corpus']:9} {r['tokenizer']:9} {r['ours_s']:>8.3f} {r['sacrebleu_s']:>12.3f} "
            f"{r['speedup']:>11.1f}x {r['cpu_speedup']:>7.1f}x  {r['equal']}"
        )
    print(f"\n(machine: {os.cpu_count()} CPUs, load average {'/'.join(f'{x:.1f}' for x in os.getloadavg())})")
    if args.json:
        args.json.write_text(json.dumps({"wordpunct": wp, "sacrebleu": sb}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
