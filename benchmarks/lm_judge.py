"""Benchmark: the throughput of the LLM judges (``llm-judge``, ``llm-pairwise``) beside the ``hf`` generator's on the
same model, the same prompts, in the same run.

    python benchmarks/lm_judge.py [--model FOLDER] [--items 64] [--max-new-tokens 8] [--batch-size 8]
                                  [--repeat 5] [--device cpu]

Without ``--model`` a tiny GPT-2 (2 layers, 32 dims, random weights: plugins/cotk-repro-lm/tests/lm_support.py) is
built in a temporary folder. Items: ``--items`` consecutive line pairs of the repository's fixture corpus (an input,
the next line as the output). The peer is the judge's own backend: ``HFGenerator.generate`` on the very prompts the
judge renders (its rubric over each input and output), so the difference is what judging adds (rendering, parsing,
hashing the inputs and the judge). Timed in turn (generator, llm-judge, llm-pairwise, generator, ...), best of
``--repeat``; llm-pairwise judges each item twice (both orders), so its judgments/s counts both. The model load is
outside the timings (each metric and the generator are built once). Prints judgments/s, generations/s and their
ratio, with the Python, torch and load average.

Figures (docs/metrics.md, "LLM judges"): Python 3.11.7, torch 2.13.0 (CPU, one intra-op thread), the tiny GPT-2,
64 items, max_new_tokens 8, batch 8, best of 7, shared 2-core machine at load average 1.0-2.0: hf generator 290.7
generations/s; llm-judge 316.8 judgments/s (1.09x the generator's rate); llm-pairwise 279.0 judgments/s (0.96x;
its prompts hold two outputs). Judging adds nothing measurable to the generation it runs.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LM_TESTS = ROOT / "plugins" / "cotk-repro-lm" / "tests"
#: short enough for the tiny model's 128 positions
TEMPLATE = "{{ input }} ({{ scale_min }}-{{ scale_max }}) {{ output }}"
PAIR_TEMPLATE = "{{ input }} A: {{ output_a }} B: {{ output_b }}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, default=None, help="a model folder (default: a tiny GPT-2 built here)")
    ap.add_argument("--items", type=int, default=64)
    ap.add_argument("--max-new-tokens", type=int, default=8)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    sys.path.insert(0, str(LM_TESTS))
    import lm_support  # the tiny model and the fixture corpus
    import torch

    from cotk_repro.metrics import get_metric
    from cotk_repro_lm.generation.hf import HFGenerator

    tmp = tempfile.TemporaryDirectory()
    model = args.model or lm_support.make_gpt2(Path(tmp.name) / "gpt2", seed=0)
    lines = [line[:80] for line in lm_support.corpus_lines()]
    inputs, outputs = lines[0 : 2 * args.items : 2], lines[1 : 2 * args.items : 2]
    decoding = {"max_new_tokens": args.max_new_tokens, "batch_size": args.batch_size, "device": args.device}
    judge = get_metric("llm-judge", judge=str(model), template=TEMPLATE, **decoding)
    pairwise = get_metric("llm-pairwise", judge=str(model), template=PAIR_TEMPLATE, baseline=outputs[::-1], **decoding)
    generator = HFGenerator(model=str(model), **decoding)
    prompts = [judge.render(input=q, output=o, scale_min=1, scale_max=5) for q, o in zip(inputs, outputs)]
    n = len(prompts)

    def run_generator() -> None:
        generator.generate(prompts)

    def run_judge() -> None:
        try:
            judge.compute(outputs, queries=inputs)
        except Exception as exc:  # a random model's answers may hold no score at all: the work was done
            if "holds a score" not in str(exc):
                raise

    def run_pairwise() -> None:
        try:
            pairwise.compute(outputs, queries=inputs)
        except Exception as exc:
            if "parsable verdict" not in str(exc):
                raise

    best = {"generator": float("inf"), "llm-judge": float("inf"), "llm-pairwise": float("inf")}
    runs = {"generator": run_generator, "llm-judge": run_judge, "llm-pairwise": run_pairwise}
    run_generator()  # warm-up: first-call allocations
    for _ in range(args.repeat):
        for name, fn in runs.items():
            t = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t)
    a, b, c = os.getloadavg()
    print(
        f"python {platform.python_version()}, torch {torch.__version__}, device {args.device}, "
        f"{os.environ.get('OMP_NUM_THREADS', 'default')} intra-op threads; load average {a:.2f} {b:.2f} {c:.2f} "
        f"on {os.cpu_count()} CPUs; model {Path(model).name}; {n} items, max_new_tokens {args.max_new_tokens}, "
        f"batch {args.batch_size}, best of {args.repeat}"
    )
    gen_rate = n / best["generator"]
    print(f"hf generator   {gen_rate:9.1f} generations/s ({best['generator']:.3f} s)")
    for name, judgments in (("llm-judge", n), ("llm-pairwise", 2 * n)):
        rate = judgments / best[name]
        print(f"{name:14} {rate:9.1f} judgments/s  ({best[name]:.3f} s; {rate / gen_rate:.2f}x the generator's rate)")
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
