"""Benchmark: paired significance tests (``cotk-repro significance``'s library) beside sacrebleu's ``PairedTest``,
in the same run.

    python benchmarks/significance.py [--data TEXYGEN_FOLDER] [--sentences 3000] [--repeat 3]

References: the first ``--sentences`` captions of ``coco_test.txt``; three systems: the first ``--sentences``
lines of Texygen's ``mle`` (the baseline), ``seq`` and ``leakgan`` instances. For BLEU (``tokenizer=13a``, sacrebleu's
``BLEU()``), chrF and TER, and for both tests at sacrebleu's defaults (paired bootstrap: 1,000 resamples;
approximate randomization: 10,000 trials; seed 12345): the best of ``--repeat`` wall times of ours
(:func:`cotk_repro.metrics.significance.paired_test`: statistics, resampling, p-values) and of sacrebleu's
``PairedTest(...)()`` (the same work: its statistics, its resampling), timed in turn so that both see the same
load, the speed-up, and a check that both give the same p-values. TER's per-sentence edit distance is sacrebleu's
own in both (``ter`` is sacrebleu's TER), so the table also shows the resampling alone, each side's per-sentence
statistics in hand before the clock starts (ours: :func:`paired_bootstrap` / :func:`approximate_randomization` on
:func:`item_statistics` computed once; sacrebleu's: its ``PairedTest`` with the metric's
``_extract_corpus_statistics`` answered from the same statistics computed once).

``--compare``: instead, ``cotk-repro compare`` on the summarization example (examples/summarization, its generator
outputs cached by a first run) with and without ``[report] intervals = true``, the best of ``--repeat`` evaluation
times of each, in turn, in one process with ``jobs = 1`` (issue 46's target: at most 1.2x).

Figures: in the closing note of issue 46 and docs/metrics.md, "Significance and intervals".
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from _data import add_data_option, require  # noqa: E402  (benchmarks/ is on sys.path)


def _best(fn, repeat):
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_option(ap)
    ap.add_argument("--sentences", type=int, default=3000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--compare", action="store_true", help="time compare's summarization example with and without")
    args = ap.parse_args()
    if args.compare:
        return compare_overhead(args.repeat)
    require(args.data, "coco_test.txt", "instances/mle.txt", "instances/seq.txt", "instances/leakgan.txt")
    import numpy as np
    import sacrebleu
    from sacrebleu.metrics import BLEU, CHRF, TER
    from sacrebleu.significance import PairedTest

    from cotk_repro.metrics import get_metric
    from cotk_repro.metrics.resampling import DEFAULT_SAMPLES, item_statistics
    from cotk_repro.metrics.significance import approximate_randomization, paired_bootstrap, paired_test

    n = args.sentences
    refs = (args.data / "coco_test.txt").read_text().splitlines()[:n]
    names = ("mle", "seq", "leakgan")
    systems = [(name, (args.data / "instances" / f"{name}.txt").read_text().splitlines()[:n]) for name in names]
    if any(len(h) < n for _, h in systems) or len(refs) < n:
        sys.exit(f"error: fewer than {n} lines in the data; pass --sentences")
    ours_refs = [[r] for r in refs]
    metrics = [
        ("bleu", lambda: get_metric("bleu", tokenizer="13a"), BLEU),
        ("chrf", lambda: get_metric("chrf"), CHRF),
        ("ter", lambda: get_metric("ter"), TER),
    ]
    print(
        f"Python {platform.python_version()}, numpy {np.__version__}, sacrebleu {sacrebleu.__version__}, "
        f"{n} sentences, 3 systems (baseline {names[0]}), best of {args.repeat}, load {os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'metric':6} {'test':4} {'ours s':>8} {'sacrebleu s':>12} {'speed-up':>9}  {'resampling: ours s':>19} "
        f"{'sacrebleu s':>12} {'speed-up':>9}  p-values equal"
    )
    totals = {"bs": [0.0, 0.0], "ar": [0.0, 0.0]}
    for name, ours_metric, peer in metrics:
        # the per-sentence statistics alone, each side's, computed once for the resampling-alone timings
        t_stats_ours, items = _best(
            lambda: [item_statistics(ours_metric(), h, ours_refs)[name] for _, h in systems], args.repeat
        )
        t_stats_peer, peer_stats = _best(
            lambda: {id(h): peer()._extract_corpus_statistics(h, [refs]) for _, h in systems}, args.repeat
        )

        def cached_peer(peer=peer, peer_stats=peer_stats):
            m = peer()
            m.num_refs = 1  # what its own statistics pass would have set (its signature reads it)
            m._extract_corpus_statistics = lambda hyps, references: peer_stats[id(hyps)]
            return m

        for method in ("bs", "ar"):
            t_ours, rows = _best(
                lambda: paired_test(ours_metric(), ours_refs, systems[0], systems[1:], method=method), args.repeat
            )
            t_peer, (_, scores) = _best(
                lambda: PairedTest(systems, {name: peer()}, [refs], test_type=method, n_samples=0)(), args.repeat
            )
            (key,) = [k for k in scores if k != "System"]
            same = [r.p_value for r in rows] == [s.p_value for s in scores[key]]
            samples = DEFAULT_SAMPLES[method]
            run = paired_bootstrap if method == "bs" else approximate_randomization
            t_resample, _ = _best(lambda: run(items[0], items[1:], samples, 12345), args.repeat)
            peer_resample, _ = _best(
                lambda: PairedTest(systems, {name: cached_peer()}, [refs], test_type=method, n_samples=0)(),
                args.repeat,
            )
            totals[method][0] += t_ours
            totals[method][1] += t_peer
            print(
                f"{name:6} {method:4} {t_ours:8.3f} {t_peer:12.3f} {t_peer / t_ours:8.1f}x  {t_resample:19.4f} "
                f"{peer_resample:12.3f} {peer_resample / t_resample:8.0f}x  {same}"
            )
        print(f"{'':6} {'':4} statistics alone: ours {t_stats_ours:.3f} s, sacrebleu {t_stats_peer:.3f} s")
    for method, (ours, theirs) in totals.items():
        print(f"all three metrics, {method}: ours {ours:.3f} s, sacrebleu {theirs:.3f} s, {theirs / ours:.1f}x")
    return 0


def compare_overhead(repeat: int) -> int:
    """compare on examples/summarization, intervals off and on, best of ``repeat`` each (evaluation only)."""
    import shutil
    import tempfile

    from cotk_repro.compare import evaluate_config, load_config, write_report

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "summarization"
        shutil.copytree(ROOT / "examples" / "summarization", root, ignore=shutil.ignore_patterns("reference-report"))
        text = (root / "benchmark.toml").read_text().replace("[report]\n", "[report]\ncharts = false\n", 1)
        (root / "off.toml").write_text(text)
        (root / "on.toml").write_text(text.replace("[report]\n", "[report]\nintervals = true\n", 1))
        evaluate_config(load_config(root / "off.toml"), jobs=1)  # the generators' outputs, cached once
        best = {"off": float("inf"), "on": float("inf")}
        for _ in range(repeat):
            for which in ("off", "on"):
                cfg = load_config(root / f"{which}.toml")
                t = time.perf_counter()
                result = evaluate_config(cfg, jobs=1)
                write_report(result)
                best[which] = min(best[which], time.perf_counter() - t)
        cells = sum(c.ci is not None for c in result.cells)
    print(
        f"compare, summarization example, jobs 1, best of {repeat}, load {os.getloadavg()[0]:.1f}: without intervals "
        f"{best['off']:.3f} s, with {best['on']:.3f} s ({best['on'] / best['off']:.2f}x; {cells} cells with an interval)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
