"""Benchmark: corpus BLEU-4, ours beside sacrebleu and sacrebleu-mojo, timed in turn in one run.

    python benchmarks/corpus_bleu.py [--data TEXYGEN_FOLDER] [--repeat 5] [--mojo-python PY312]

The MLE generations of ``instances/mle.txt`` against ``coco_test.txt`` paired line by line (~10k pairs), two ways:

* pre-tokenized: the WordPunct tokens (ours: token lists with ``retokenize=False``; sacrebleu and sacrebleu-mojo:
  the same tokens joined by spaces, ``tokenize='none'``);
* text in: the raw lines (ours: the ``bleu`` metric as users call it, WordPunct tokenization and the hash included;
  sacrebleu and sacrebleu-mojo: their default ``13a`` tokenizer, so their values differ from ours by the tokenizer).

Each is the best of ``--repeat`` wall times, ours / sacrebleu / mojo in turn so that all see the same load.
Values: ours is NLTK's ``corpus_bleu`` with ``method3`` (CoTK's), sacrebleu's its ``floor`` smoothing at 0.1 (the
closest; docs/bleu-semantics.md says why they differ on zero-count orders); mojo's must equal sacrebleu's.
sacrebleu-mojo is imported here when this Python has it (a Python 3.12 with the project's dependencies), else run
in a worker under ``--mojo-python`` (benchmarks/_mojo.py).

Figures (docs/metrics.md has the full table): Python 3.12.1 in one process for all three, sacrebleu 2.6.0,
sacrebleu-mojo 0.2.4, shared 2-core machine at load average 4.0-6.0, best of 9: pre-tokenized ours 0.048 s,
sacrebleu 0.359 s, mojo 0.054 s (ours 7.5x sacrebleu, 1.12x mojo; mojo 6.7x sacrebleu); text in ours 0.068 s,
sacrebleu 0.348 s, mojo 0.225 s (ours 5.1x sacrebleu, 3.3x mojo). At load 6.9-7.7: pre-tokenized ours 0.050 s,
sacrebleu 0.522 s, mojo 0.069 s (1.38x mojo). The issue's earlier figures: mojo 7.2x sacrebleu, ours 6.7x
pre-tokenized and 4.2x text in.
"""

from __future__ import annotations

import argparse
import logging
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from _data import add_data_option, require  # noqa: E402  (benchmarks/ is on sys.path)
from _mojo import load, open_mojo  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_option(ap)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument(
        "--mojo-python",
        type=Path,
        default=None,
        help="a Python >= 3.12 with sacrebleu-mojo installed (not needed when this Python has it)",
    )
    args = ap.parse_args()
    require(args.data, "coco_test.txt", "instances/mle.txt")
    import numpy
    import sacrebleu
    from sacrebleu.metrics import BLEU

    from cotk_repro.metrics import get_metric
    from cotk_repro.metrics.ngrams import tokenize_texts

    logging.getLogger("sacrebleu").setLevel(logging.ERROR)
    hyps = (args.data / "instances" / "mle.txt").read_text(encoding="utf-8").splitlines()
    refs = (args.data / "coco_test.txt").read_text(encoding="utf-8").splitlines()[: len(hyps)]
    h_tok, r_tok = tokenize_texts(hyps), tokenize_texts(refs)
    h_sp, r_sp = [" ".join(t) for t in h_tok], [" ".join(t) for t in r_tok]
    print(
        f"ours and sacrebleu: python {platform.python_version()}, numpy {numpy.__version__}, sacrebleu "
        f"{sacrebleu.__version__}; {len(hyps)} pairs; {load()}"
    )
    ok = True
    for label, ours_in, peer_h, peer_r, tok in (
        ("pre-tokenized", (h_tok, [[t] for t in r_tok]), h_sp, r_sp, "none"),
        ("text in", (hyps, [[r] for r in refs]), hyps, refs, "13a"),
    ):
        metric = get_metric("bleu", retokenize=tok != "none")
        sb = BLEU(tokenize=tok, smooth_method="floor", smooth_value=0.1)
        mojo = open_mojo(peer_h, peer_r, args.mojo_python)
        times: dict[str, float] = {}
        values: dict[str, float] = {}

        def run(who: str, fn) -> None:
            t = time.perf_counter()
            values[who] = fn()
            times[who] = min(times.get(who, float("inf")), time.perf_counter() - t)

        for _ in range(args.repeat):
            run("ours", lambda: metric.compute(*ours_in)["bleu"])
            run("sacrebleu", lambda: sb.corpus_score(peer_h, [peer_r]).score / 100)
            if mojo is not None:
                t, score = mojo.time("corpus_bleu", tokenize=tok, smooth_method="floor", smooth_value=0.1)
                times["mojo"] = min(times.get("mojo", float("inf")), t)
                values["mojo"] = score / 100
        line = (
            f"{label:13s} ours {times['ours']:6.3f} s  sacrebleu ({tok}) {times['sacrebleu']:6.3f} s "
            f"(ours x{times['sacrebleu'] / times['ours']:5.2f})"
        )
        if mojo is not None:
            line += (
                f"  sacrebleu-mojo {mojo.info['version']} ({tok}) {times['mojo']:6.3f} s (ours "
                f"x{times['mojo'] / times['ours']:4.2f}; mojo vs sacrebleu x{times['sacrebleu'] / times['mojo']:4.2f})"
            )
            ok &= abs(values["mojo"] - values["sacrebleu"]) <= 1e-12
            mojo.close()
        print(
            line
            + f"  values ours {values['ours']!r} sacrebleu {values['sacrebleu']!r}"
            + (f" mojo {values['mojo']!r}" if "mojo" in values else "")
        )
    print(load())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
