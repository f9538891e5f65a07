"""Benchmark: ``chrf`` (chrF and chrF++) and ``ter`` against sacrebleu's own ``CHRF`` / ``TER`` and, for chrF, the
peer sacrebleu-mojo, all in the same run.

    python benchmarks/chrf_ter.py [--data TEXYGEN_FOLDER] [--pairs 10000] [--ter-pairs 2000] [--repeat 5]
                                  [--mojo-python PY312]

Hypotheses: the first ``--pairs`` captions of ``coco_test.txt``; references: the same number of
``coco_train.txt`` lines, paired by line (text in: the metric reads, processes and hashes the raw strings).
For chrF (``word_order`` 0) and chrF++ (2), and for TER on ``--ter-pairs`` pairs: the best of ``--repeat``
wall times of our metric (values, hash and signature included), of sacrebleu's ``corpus_score`` with the
same settings and of sacrebleu-mojo's ``corpus_chrf`` (benchmarks/_mojo.py: imported here when this Python has
it, e.g. a Python 3.12 venv with the project's dependencies and ``sacrebleu-mojo``, else in a worker under
``--mojo-python``), timed in turn (ours, sacrebleu, mojo, ours, ...) so that all see the same load; the values
(they must be equal) and the speed-ups. TER is sacrebleu's itself in ours (its edit distance with shifts is the
cost), so its ratio shows only our overhead. The Python versions and the load average are printed with them.

Figures (docs/metrics.md has the table): Python 3.12.1 in one process for all three, sacrebleu 2.6.0,
sacrebleu-mojo 0.2.4, 10,000 pairs, shared 2-core machine at load average 4.0-6.2, best of 9: chrF ours 0.092 s,
sacrebleu 1.656 s, mojo 0.123 s (ours 17.9x sacrebleu, 1.33x mojo); chrF++ ours 0.109 s, sacrebleu 1.531 s, mojo
0.168 s (14.0x, 1.54x); TER on 500 pairs 0.98x sacrebleu (its own computation).
"""

from __future__ import annotations

import argparse
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
    ap.add_argument("--pairs", type=int, default=10000)
    ap.add_argument("--ter-pairs", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument(
        "--mojo-python",
        type=Path,
        default=None,
        help="a Python >= 3.12 with sacrebleu-mojo installed (not needed when this Python has it)",
    )
    args = ap.parse_args()
    require(args.data, "coco_train.txt", "coco_test.txt")
    import numpy
    import sacrebleu
    from sacrebleu.metrics import CHRF, TER

    from cotk_repro.metrics import get_metric

    hyps = (args.data / "coco_test.txt").read_text(encoding="utf-8").splitlines()[: args.pairs]
    refs = (args.data / "coco_train.txt").read_text(encoding="utf-8").splitlines()[: len(hyps)]
    mojo = open_mojo(hyps, refs, args.mojo_python)
    print(
        f"ours and sacrebleu: python {platform.python_version()}, numpy {numpy.__version__}, sacrebleu "
        f"{sacrebleu.__version__}; {len(hyps)} pairs; {load()}"
    )
    if mojo is not None:
        print(
            f"sacrebleu-mojo {mojo.info['version']}: python {mojo.info['python']}, native kernel "
            f"{'loaded' if mojo.info['native'] else 'NOT loaded (its pure-Python fallback)'}, {mojo.info['where']}"
        )
    ok = True
    for label, name, settings, n in (
        ("chrF", "chrf", {"word_order": 0}, len(hyps)),
        ("chrF++", "chrf", {"word_order": 2}, len(hyps)),
        ("TER", "ter", {}, min(args.ter_pairs, len(hyps))),
    ):
        h, r = hyps[:n], refs[:n]
        peer = CHRF(**settings) if name == "chrf" else TER(**settings)
        metric = get_metric(name, **settings)
        nested = [[x] for x in r]
        times: dict[str, float] = {}
        values: dict[str, float] = {}

        def run(who: str, fn) -> None:
            t = time.perf_counter()
            values[who] = fn()
            times[who] = min(times.get(who, float("inf")), time.perf_counter() - t)

        for _ in range(args.repeat):
            run("ours", lambda: metric.compute(h, nested)[name])
            run("sacrebleu", lambda: peer.corpus_score(h, [r]).score / 100)
            if mojo is not None and name == "chrf":
                t, score = mojo.time("corpus_chrf", word_order=settings["word_order"])
                times["mojo"] = min(times.get("mojo", float("inf")), t)
                values["mojo"] = score / 100
        line = (
            f"{label:7s} {n:6d} pairs  ours {times['ours']:6.3f} s  sacrebleu {times['sacrebleu']:6.3f} s "
            f"(ours x{times['sacrebleu'] / times['ours']:5.2f})"
        )
        if "mojo" in times:
            line += (
                f"  sacrebleu-mojo {times['mojo']:6.3f} s (ours x{times['mojo'] / times['ours']:4.2f}; mojo vs "
                f"sacrebleu x{times['sacrebleu'] / times['mojo']:4.2f})"
            )
        equal = all(abs(v - values["sacrebleu"]) <= 1e-9 for v in values.values())
        ok &= equal
        print(line + f"  values {' / '.join(repr(values[k]) for k in values)}  equal={equal}")
    print(load())
    if mojo is not None:
        mojo.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
