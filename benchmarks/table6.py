"""Table 6 of the CoTK paper: perplexity under different frequent vocabularies.

An interpolated Kneser-Ney n-gram LM (cotk_repro.metrics.kn_lm) is trained on
coco_train.txt of the Texygen folder --data where every word outside the frequent vocabulary F
(train words seen >= min_frequent_vocab_times times) is replaced by <unk>; it is evaluated
on coco_test.txt. F and R come from the library's language-generation dataloader, so
F ∪ R (all words of both splits) is the same in every row.

Printed per threshold: |F|, |R|, the paper's perplexity (a rare word costs
log(p(<unk>)/|R|): the perplexity metric), the original perplexity (a rare word costs
log p(<unk>), as if <unk> were a word), and the perplexity hash. The original one falls
as F shrinks -- a smaller vocabulary looks better for no reason -- while the paper's
stays comparable and its hash stays the same.

A second table times the LM (training + scoring the test split, forward and reverse
roles as fw-rv-ppl uses it) against NLTK's KneserNeyInterpolated, the peer, on a subset
(NLTK scores each word by scanning all n-grams, so it is timed on few sentences and the
rate extrapolated).

    python benchmarks/table6.py [--order 3] [--thresholds 1,2,5,10,20,50,100] [--peer-sentences 30]
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from _data import add_data_option, require  # noqa: E402  (benchmarks/ is on sys.path)


def load(threshold: int, folder: Path):
    from cotk_repro import data

    return data.load(
        "language-generation", folder, tokenizer="nltk", min_frequent_vocab_times=threshold, splits=["train", "test"]
    )


def table6(order: int, thresholds: list[int], folder: Path) -> list[dict]:
    from cotk_repro.metrics import get_metric
    from cotk_repro.metrics.kn_lm import UNK, KneserNeyLM

    rows = []
    for t in thresholds:
        start = time.perf_counter()
        dl = load(t, folder)
        freq = set(dl.vocab.frequent)
        train = [[w if w in freq else UNK for w in s] for s in dl.sentences("train")]
        lm = KneserNeyLM(order, discount=0.75).fit(train)
        test = dl.sentences("test")
        # the model's log-probability of each target as it sees it (the word, or <unk>), then </s>
        log_probs = [lm.sentence_log_probs([w if w in freq else UNK for w in s]) for s in test]
        res = get_metric("perplexity", dataloader=dl).compute_lists(test, log_probs)
        n_tokens = sum(map(len, log_probs))
        original = math.exp(-sum(map(sum, log_probs)) / n_tokens)
        rows.append(
            {
                "threshold": t,
                "F": len(dl.vocab.frequent),
                "R": len(dl.vocab.rare),
                "paper": res["perplexity"],
                "original": original,
                "hash": res["perplexity hashvalue"],
                "loader_hash": dl.reference_hashes("test")["perplexity"],
                "seconds": time.perf_counter() - start,
            }
        )
    return rows


def peer(order: int, n_sentences: int, folder: Path) -> dict:
    from nltk.lm import KneserNeyInterpolated, Vocabulary
    from nltk.lm.preprocessing import padded_everygram_pipeline

    from cotk_repro.metrics.kn_lm import KneserNeyLM

    dl = load(1, folder)
    train, test = dl.sentences("train"), dl.sentences("test")

    def score_all(score, sents):
        total = 0.0
        for s in sents:
            padded = ["<s>"] * (order - 1) + list(s) + ["</s>"]
            for i in range(order - 1, len(padded)):
                total += math.log(score(padded[i], padded[i - order + 1 : i]))
        return total

    t0 = time.perf_counter()
    ours = KneserNeyLM(order, 0.3, 2, mode="nltk").fit(train)
    t_fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    ours_total = score_all(ours.score, test)
    t_score = time.perf_counter() - t0
    ours_subset = score_all(ours.score, test[:n_sentences])

    t0 = time.perf_counter()
    nl = KneserNeyInterpolated(order, discount=0.3)
    ngrams, flat = padded_everygram_pipeline(order, train)
    nl.fit(ngrams, Vocabulary(flat, unk_cutoff=2))
    n_fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    nltk_subset = score_all(nl.score, test[:n_sentences])
    n_score_subset = time.perf_counter() - t0
    n_score = n_score_subset * len(test) / n_sentences
    return {
        "sentences": len(test),
        "ours_fit": t_fit,
        "ours_score": t_score,
        "ours_total": ours_total,
        "nltk_fit": n_fit,
        "nltk_score_subset": n_score_subset,
        "nltk_score_extrapolated": n_score,
        "subset": n_sentences,
        "subset_diff": abs(ours_subset - nltk_subset) / abs(nltk_subset),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--order", type=int, default=3, help="n-gram order of the Kneser-Ney LM (default 3)")
    ap.add_argument(
        "--thresholds", default="1,2,5,10,20,50,100", help="comma-separated min_frequent_vocab_times values"
    )
    ap.add_argument(
        "--peer-sentences",
        type=int,
        default=30,
        help="test sentences NLTK scores for the timing peer (0 skips the peer)",
    )
    add_data_option(ap)
    args = ap.parse_args()
    data = args.data
    require(data, "coco_train.txt", "coco_test.txt")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)  # the loader reads {split}.txt: link the files, never copy them
        (folder / "train.txt").symlink_to(data / "coco_train.txt")
        (folder / "test.txt").symlink_to(data / "coco_test.txt")
        rows = table6(args.order, [int(x) for x in args.thresholds.split(",")], folder)
        print(f"Table 6: {args.order}-gram Kneser-Ney LM, texygen coco train -> test, tokenizer nltk")
        print(
            f"{'min_freq':>8} {'|F|':>6} {'|R|':>6} {'paper ppl':>10} {'original ppl':>13}  "
            f"{'perplexity hash':<16} {'s':>5}"
        )
        for r in rows:
            same = "(= loader)" if r["hash"] == r["loader_hash"] else "(!= loader)"
            print(
                f"{r['threshold']:>8} {r['F']:>6} {r['R']:>6} {r['paper']:>10.2f} {r['original']:>13.2f}  "
                f"{r['hash'][:12]}.. {same} {r['seconds']:>5.1f}"
            )
        papers = [r["paper"] for r in rows]
        originals = [r["original"] for r in rows]
        print(
            f"original ppl: {originals[0]:.2f} -> {originals[-1]:.2f} "
            f"({originals[-1] / originals[0]:.2f}x) as |F| goes {rows[0]['F']} -> {rows[-1]['F']}; "
            f"paper ppl spread: {min(papers):.2f}..{max(papers):.2f} "
            f"({max(papers) / min(papers):.2f}x); hashes equal: {len({r['hash'] for r in rows}) == 1}"
        )
        if args.peer_sentences > 0:
            p = peer(args.order, args.peer_sentences, folder)
            print(
                f"\nKneser-Ney LM speed, {args.order}-gram, NLTK formulas (mode='nltk'), "
                f"{p['sentences']} test sentences:"
            )
            print(f"  cotk-repro: fit {p['ours_fit']:.2f} s, score all {p['ours_score']:.2f} s")
            print(
                f"  NLTK KneserNeyInterpolated (peer): fit {p['nltk_fit']:.2f} s, score {p['subset']} sentences "
                f"{p['nltk_score_subset']:.2f} s -> all ~{p['nltk_score_extrapolated']:.0f} s (extrapolated)"
            )
            print(
                f"  scoring speedup ~{p['nltk_score_extrapolated'] / p['ours_score']:.0f}x; "
                f"log-likelihood relative difference on the subset: {p['subset_diff']:.1e}"
            )


if __name__ == "__main__":
    main()
