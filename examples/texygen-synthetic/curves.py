"""Train the seven Texygen models with one preset and write their NLL-oracle / NLL-test / EmbSim curves.

    python examples/texygen-synthetic/curves.py --preset cpu --out curves.json

Prints a Markdown table (final values, and each curve) for docs/texygen.md; the JSON holds every point.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from cotk_repro_texygen.models import MODELS
from cotk_repro_texygen.protocol import run


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="cpu")
    p.add_argument("--out", default="curves.json")
    p.add_argument("--models", default=",".join(MODELS))
    args = p.parse_args(argv)
    doc = {}
    for model in args.models.split(","):
        t0 = time.perf_counter()
        r = run(model, args.preset, out_dir=None, log=lambda line: None)
        doc[model] = {"curve": r.curve, "final": {k: r.entries[k] for k in ("nll-oracle", "nll-test", "embsim")},
                      "seconds": round(time.perf_counter() - t0, 1)}
        print(model, doc[model]["final"], doc[model]["seconds"], "s", flush=True)
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"preset": args.preset, "models": doc}, f, indent=1)
    print("| model | NLL-oracle | NLL-test | EmbSim | seconds |\n|---|---|---|---|---|")
    for model, d in doc.items():
        f = d["final"]
        print(f"| {model} | {f['nll-oracle']:.3f} | {f['nll-test']:.3f} | {f['embsim']:.3f} | {d['seconds']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
