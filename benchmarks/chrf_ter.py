"""Benchmark: ``chrf`` (chrF and chrF++) and ``ter`` against sacrebleu's own ``CHRF`` / ``TER``, in the same run.

    python benchmarks/chrf_ter.py [--data TEXYGEN_FOLDER] [--pairs 10000] [--ter-pairs 2000] [--repeat 3]

Hypotheses: the first ``--pairs`` captions of ``coco_test.txt``; references: the same number of
``coco_train.txt`` lines, paired by line (text in: the metric reads, processes and hashes the raw strings).
For chrF (``word_order`` 0) and chrF++ (2), and for TER on ``--ter-pairs`` pairs: the best of ``--repeat``
wall times of our metric (values, hash and signature included) and of sacrebleu's ``corpus_score`` with the
same settings, the two values (they must be equal), and the speed-up. TER is sacrebleu's itself in ours
(its edit distance with shifts is the cost), so its ratio shows only our overhead.

sacrebleu-mojo (a PyPI package for Python >= 3.12 with a native Mojo chrF kernel, "drop-in faster replacement
for sacrebleu's BLEU and chrF") is the further peer: it does not install under this project's Python 3.11, so
``--mojo-python PATH`` names a Python >= 3.12 that has it (e.g. a venv: ``python3.12 -m venv v &&
v/bin/pip install sacrebleu-mojo``); its ``corpus_chrf`` is timed in that interpreter, in this run, on the
same pairs, and its value printed beside ours.
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


def best_of(repeat: int, fn):
    best, value = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t)
    return best, value


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_option(ap)
    ap.add_argument("--pairs", type=int, default=10000)
    ap.add_argument("--ter-pairs", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--mojo-python", type=Path, default=None, help="a Python >= 3.12 with sacrebleu-mojo installed")
    args = ap.parse_args()
    require(args.data, "coco_train.txt", "coco_test.txt")
    import sacrebleu
    from sacrebleu.metrics import CHRF, TER

    from cotk_repro.metrics import get_metric

    hyps = (args.data / "coco_test.txt").read_text(encoding="utf-8").splitlines()[:args.pairs]
    refs = (args.data / "coco_train.txt").read_text(encoding="utf-8").splitlines()[:len(hyps)]
    print(f"python {platform.python_version()}, sacrebleu {sacrebleu.__version__}, {len(hyps)} pairs")
    rows = []
    for label, name, settings, n in (("chrF", "chrf", {"word_order": 0}, len(hyps)),
                                     ("chrF++", "chrf", {"word_order": 2}, len(hyps)),
                                     ("TER", "ter", {}, min(args.ter_pairs, len(hyps)))):
        h, r = hyps[:n], refs[:n]
        peer = CHRF(**settings) if name == "chrf" else TER(**settings)
        t_peer, v_peer = best_of(args.repeat, lambda peer=peer, h=h, r=r: peer.corpus_score(h, [r]).score / 100)
        metric = get_metric(name, **settings)
        nested = [[x] for x in r]
        t_ours, out = best_of(args.repeat, lambda metric=metric, h=h, nested=nested: metric.compute(h, nested))
        v_ours = out[name]
        rows.append((label, n, t_ours, t_peer, v_ours, v_peer))
        print(f"{label:7s} {n:6d} pairs  ours {t_ours:7.3f} s  sacrebleu {t_peer:7.3f} s  x{t_peer / t_ours:5.2f}  "
              f"values {v_ours!r} / {v_peer!r}  equal={abs(v_ours - v_peer) <= 1e-9}")
    if args.mojo_python is not None:
        mojo(args, rows)
    return 0 if all(abs(v - p) <= 1e-9 for *_, v, p in rows) else 1


MOJO = """
import json, sys, time
import sacrebleu_mojo
hyps, refs, orders, repeat = json.load(sys.stdin)
out = {"backend": str(sacrebleu_mojo.backend_info()), "version": sacrebleu_mojo.__version__, "rows": []}
for wo in orders:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        score = sacrebleu_mojo.corpus_chrf(hyps, [refs], word_order=wo).score
        best = min(best, time.perf_counter() - t)
    out["rows"].append([wo, best, score / 100])
print(json.dumps(out))
"""


def mojo(args, rows) -> None:
    """sacrebleu-mojo's corpus_chrf in its own interpreter, on the same pairs."""
    import json
    import subprocess

    hyps = (args.data / "coco_test.txt").read_text(encoding="utf-8").splitlines()[:args.pairs]
    refs = (args.data / "coco_train.txt").read_text(encoding="utf-8").splitlines()[:len(hyps)]
    proc = subprocess.run([str(args.mojo_python), "-c", MOJO], input=json.dumps([hyps, refs, [0, 2], args.repeat]),
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        print(f"sacrebleu-mojo: failed ({proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else 'no output'})")
        return
    out = json.loads(proc.stdout)
    print(f"sacrebleu-mojo {out['version']} ({out['backend']})")
    ours = {"chrF": rows[0], "chrF++": rows[1]}
    for (_wo, t, value), label in zip(out["rows"], ("chrF", "chrF++")):
        _, n, t_ours, t_peer, v_ours, _ = ours[label]
        print(f"{label:7s} {n:6d} pairs  ours {t_ours:7.3f} s  sacrebleu-mojo {t:7.3f} s  ours x{t / t_ours:5.2f} "
              f"faster  mojo vs sacrebleu x{t_peer / t:5.2f}  values {v_ours!r} / {value!r}")


if __name__ == "__main__":
    sys.exit(main())
