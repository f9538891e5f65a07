"""Benchmark: the Texygen and summarization examples of `cotk-repro compare`, end to end, and CIDEr-D.

    python benchmarks/compare.py [--data TEXYGEN_FOLDER] [--jobs N] [--out DIR] [--peer-hyps N]
    python benchmarks/compare.py --summarization [--jobs N]
    python benchmarks/compare.py --cider [--data TEXYGEN_FOLDER] [--cider-hyps N]

``--summarization``: examples/summarization/benchmark.toml end to end with an empty generator cache, then
each summarizer timed on each corpus and each metric's worker time (needs the cotk-repro-summarizers
plugin). ``--cider``: CIDEr-D on N (10,000) COCO test captions as hypotheses with 5 references each drawn
(seeded) from the COCO train captions, this tool against pycocoevalcap's ``Cider`` in the same run: the
values and the speed-up (target >= 10x).

Scores the six Texygen generators (instances/*.txt of the folder --data)
against coco_test.txt with every metric of examples/texygen/benchmark.toml
(config checks, parallel evaluation, CSVs, charts, HTML). Target: <= 30 s on
the 2-core dev machine. Prints the wall time of each phase, the time per
metric (summed over systems, in the workers), whether the values and hashes
equal the committed reference report, and, as the peer, Texygen's own way of
computing the same BLEU numbers (NLTK ``sentence_bleu`` of each generated
sentence against the whole test set, in a loop) timed on a few hypotheses in
this run and extrapolated to the full sets (Texygen samples 500 sentences
because of that cost).
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from _data import add_data_option, require  # noqa: E402  (benchmarks/ is on sys.path)

CONFIG = ROOT / "examples" / "texygen" / "benchmark.toml"
REFERENCE = ROOT / "examples" / "texygen" / "reference-report"


def compare_with_reference(out: Path) -> tuple[int, int, float]:
    """(cells equal in hash, cells compared, max |value difference|) against the committed report."""

    def rows(p: Path) -> dict:
        with open(p, newline="", encoding="utf-8") as fh:
            return {(r["system"], r["dataset"], r["column"]): r for r in csv.DictReader(fh)}

    ref_file = REFERENCE / "results.csv"
    if not ref_file.is_file():
        return 0, 0, float("nan")
    new, ref = rows(out / "results.csv"), rows(ref_file)
    same, worst = 0, 0.0
    for key, r in ref.items():
        n = new.get(key)
        if n is None or not r["value"] or not n["value"]:
            continue
        same += n["hash"] == r["hash"]
        worst = max(worst, abs(float(n["value"]) - float(r["value"])))
    return same, len(ref), worst


def peer_nltk(data: Path, n_hyps: int) -> dict[str, float]:
    """Texygen's BLEU loop: seconds per generated sentence for forward BLEU-n against the full test set."""
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    refs = [line.split() for line in (data / "coco_test.txt").read_text(encoding="utf-8").splitlines()]
    hyps = [line.split() for line in (data / "instances" / "mle.txt").read_text(encoding="utf-8").splitlines()[:n_hyps]]
    smooth = SmoothingFunction().method1
    out = {}
    for n in (2, 5):
        start = time.perf_counter()
        for h in hyps:
            sentence_bleu(refs, h, tuple(1.0 / n for _ in range(n)), smoothing_function=smooth)
        out[f"bleu-{n}"] = (time.perf_counter() - start) / len(hyps)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, default=CONFIG, help="the compare config (default: the Texygen example)")
    ap.add_argument("--jobs", type=int, default=None, help="worker processes (default: CPUs)")
    ap.add_argument("--out", type=Path, default=None, help="report folder (default: a temporary folder)")
    ap.add_argument("--peer-hyps", type=int, default=10, help="hypotheses timed for the NLTK peer (0: skip)")
    add_data_option(ap)
    ap.add_argument("--summarization", action="store_true", help="benchmark the summarization example instead")
    ap.add_argument("--cider", action="store_true", help="benchmark CIDEr-D against pycocoevalcap instead")
    ap.add_argument("--cider-hyps", type=int, default=10000, help="hypotheses for --cider (default 10,000)")
    args = ap.parse_args()
    if args.summarization:
        from compare_summarization import run_summarization

        return run_summarization(args.jobs)
    if args.cider:
        from compare_summarization import run_cider

        require(args.data, "coco_train.txt", "coco_test.txt")
        return run_cider(args.data.resolve().parent, args.cider_hyps)  # it reads <folder>/texygen/
    require(args.data, "coco_test.txt", "instances")
    os.environ["COTK_REPRO_TEXYGEN_DATA"] = str(args.data.resolve())  # the example config reads it

    from cotk_repro.compare import evaluate_config, load_config, write_report

    load_before = " ".join(f"{x:.1f}" for x in os.getloadavg())
    tmp = tempfile.TemporaryDirectory()
    out = args.out or Path(tmp.name) / "report"
    t0 = time.perf_counter()
    from cotk_repro.errors import CotkError

    try:
        cfg = load_config(args.config, out=out, jobs=args.jobs)
    except CotkError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 2
    t1 = time.perf_counter()
    result = evaluate_config(cfg, jobs=args.jobs)
    t2 = time.perf_counter()
    files = write_report(result)
    t3 = time.perf_counter()
    total = t3 - t0

    n_sys = len(cfg.systems)
    print(
        f"Texygen example: {n_sys} systems x {len(cfg.datasets)} dataset x {len(cfg.metrics)} metric entries "
        f"({len(result.all_columns())} columns), jobs={args.jobs or cfg.jobs or os.cpu_count()}, "
        f"cpus={os.cpu_count()}, load average before: {load_before}"
    )
    print(f"  config + checks     {t1 - t0:7.2f} s")
    print(f"  evaluation (wall)   {t2 - t1:7.2f} s")
    print(f"  report ({len(files)} files)  {t3 - t2:7.2f} s")
    print(f"  total               {total:7.2f} s   target <= 30 s: {'met' if total <= 30 else 'NOT met'}")
    print("time per metric (seconds of worker time, summed over the systems; per system in brackets):")
    for m in cfg.metrics:
        s = result.seconds.get(m.label, 0.0)
        opts = " ".join(f"{k}={v}" for k, v in m.options.items())
        cols = ", ".join(result.columns.get(m.label, []))
        print(f"  {(m.name + ' ' + opts).strip():<30} {s:7.2f} s  ({s / max(n_sys, 1):.2f} s per system)  -> {cols}")
    if result.failures:
        print(f"FAILURES: {len(result.failures)}")
        for f in result.failures:
            print(f"  {f.system}/{f.dataset}/{f.metric}: {f.message}")
    same, n, worst = compare_with_reference(out)
    if n:
        print(f"reference report: {same}/{n} hashes equal, max |value difference| {worst:.3g}")
    if args.peer_hyps:
        per = peer_nltk(args.data, args.peer_hyps)
        n_lines = len((args.data / "instances" / "mle.txt").read_text(encoding="utf-8").splitlines())
        est = sum(per.values()) / len(per) * 4 * n_lines * n_sys  # BLEU-2..5 forward only, all systems
        print(
            f"peer (Texygen's NLTK sentence_bleu loop, {args.peer_hyps} MLE hypotheses vs all "
            f"{len((args.data / 'coco_test.txt').read_text(encoding='utf-8').splitlines())} references, this run): "
            + ", ".join(f"{k} {v * 1000:.0f} ms/sentence" for k, v in per.items())
        )
        print(
            f"  extrapolated to forward BLEU-2..5 of all {n_sys} x {n_lines} sentences: {est / 3600:.1f} h "
            f"(this tool: {sum(result.seconds.get(m.label, 0) for m in cfg.metrics if m.name == 'fw-bw-bleu'):.1f} s "
            "of worker time for every BLEU-family column)"
        )
    tmp.cleanup()
    return 0 if not result.failures else 1


if __name__ == "__main__":
    sys.exit(main())
