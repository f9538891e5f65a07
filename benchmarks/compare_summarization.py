"""The summarization and CIDEr parts of ``benchmarks/compare.py`` (run them through it: ``--summarization``,
``--cider``)."""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
EXAMPLE = ROOT / "examples" / "summarization"


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def run_summarization(jobs: int | None) -> int:
    """The example end to end (empty cache), then per generator and per metric."""
    try:
        import cotk_repro_summarizers  # noqa: F401
    except ImportError:
        print(
            "the summarization example needs the plugin: pip install -e plugins/cotk-repro-summarizers", file=sys.stderr
        )
        return 2
    from cotk_repro.compare import evaluate_config, load_config, write_report
    from cotk_repro.compare.generate import generate_cached

    load_before = _load()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report"
        t0 = time.perf_counter()
        cfg = load_config(EXAMPLE / "benchmark.toml", out=out, jobs=jobs)
        cfg.cache = Path(tmp) / "cache"
        t1 = time.perf_counter()
        result = evaluate_config(cfg, jobs=jobs)
        t2 = time.perf_counter()
        files = write_report(result)
        t3 = time.perf_counter()
        print(
            f"summarization example: {len(cfg.systems)} summarizers x {len(cfg.datasets)} corpora x "
            f"{len(cfg.metrics)} metric entries ({len(result.all_columns())} columns), "
            f"jobs={jobs or cfg.jobs or os.cpu_count()}, cpus={os.cpu_count()}, load average before: {load_before}"
        )
        print(f"  config + checks                    {t1 - t0:7.2f} s")
        print(f"  generation + evaluation (wall)     {t2 - t1:7.2f} s")
        print(f"  report ({len(files)} files)                {t3 - t2:7.2f} s")
        print(f"  total                              {t3 - t0:7.2f} s")
        same = all((out / p.name).read_bytes() == p.read_bytes() for p in (EXAMPLE / "reference-report").glob("*.csv"))
        print(f"  CSVs equal to the committed reference report: {'yes' if same else 'NO'}")
        if result.failures:
            for f in result.failures:
                print(f"  FAILURE {f.system}/{f.dataset}/{f.metric}: {f.message}")
        print("per generator (seconds, empty cache, in this process):")
        for sysm in cfg.systems:
            cells = []
            for ds in cfg.datasets:
                start = time.perf_counter()
                generate_cached(
                    sysm.generator,
                    sysm.settings,
                    ds.inputs,
                    Path(tmp) / "timing-cache",
                    ds.inputs_format or ds.sample_format,
                )
                cells.append(f"{ds.name} {time.perf_counter() - start:6.3f}")
            print(f"  {sysm.name:<10} " + "   ".join(cells))
        print("per metric (seconds of worker time, summed over systems and corpora):")
        for m in cfg.metrics:
            print(
                f"  {m.label:<10} {result.seconds.get(m.label, 0.0):7.3f} s  -> "
                f"{', '.join(result.columns.get(m.label, []))}"
            )
    return 1 if result.failures else 0


def coco_cider_inputs(data: Path, n: int, refs_per: int = 5, seed: int = 0) -> tuple[list[str], list[list[str]]]:
    """n COCO test captions as hypotheses, each with ``refs_per`` train captions drawn with a seeded RNG."""
    test = (data / "texygen" / "coco_test.txt").read_text(encoding="utf-8").splitlines()
    train = (data / "texygen" / "coco_train.txt").read_text(encoding="utf-8").splitlines()
    rng = random.Random(seed)
    hyps = [test[i % len(test)] for i in range(n)]
    return hyps, [rng.sample(train, refs_per) for _ in hyps]


def run_cider(data: Path, n: int) -> int:
    """CIDEr-D: this tool against pycocoevalcap's Cider on the same inputs, same run."""
    if not (data / "texygen" / "coco_test.txt").is_file():
        print(f"COCO captions not found under {data}/texygen (give --data)", file=sys.stderr)
        return 2
    try:
        from pycocoevalcap.cider.cider import Cider
    except ImportError:
        print("the peer needs pycocoevalcap: pip install pycocoevalcap", file=sys.stderr)
        return 2
    from cotk_repro.metrics import get_metric

    hyps, refs = coco_cider_inputs(data, n)
    load_before = _load()
    ours_times, peer_times = [], []
    for _ in range(3):
        start = time.perf_counter()
        ours = get_metric("cider").compute(hyps, refs)["cider"]
        ours_times.append(time.perf_counter() - start)
    for _ in range(2):
        start = time.perf_counter()
        peer, _ = Cider().compute_score({i: r for i, r in enumerate(refs)}, {i: [h] for i, h in enumerate(hyps)})
        peer_times.append(time.perf_counter() - start)
    t_ours, t_peer = min(ours_times), min(peer_times)
    print(
        f"CIDEr-D on {len(hyps)} COCO test captions x {len(refs[0])} train-caption references each "
        f"(seeded), cpus={os.cpu_count()}, load average before: {load_before}"
    )
    print(f"  cotk-repro cider        {ours!r:<22} {t_ours:7.3f} s (best of {len(ours_times)})")
    print(f"  pycocoevalcap Cider     {float(peer)!r:<22} {t_peer:7.3f} s (best of {len(peer_times)})")
    diff = abs(ours - float(peer))
    print(
        f"  |difference| {diff:.3g} ({'equal within 1e-9' if diff <= 1e-9 else 'NOT equal'}); "
        f"speed-up {t_peer / t_ours:.1f}x (target >= 10x: {'met' if t_peer / t_ours >= 10 else 'NOT met'})"
    )
    return 0 if diff <= 1e-9 else 1
