"""What resolving each result's declared tolerance adds to `reproduce` / `diff`, beside the comparison itself.

Each figure is the median over fresh processes (the lookup's cost is mostly imports, paid once a process):

* ``peer``: import :mod:`cotk_repro.reproduce.core` and load the plugins (what a reproduce has done before it
  compares), then :func:`compare_results` of the keys with the old fixed tolerance (1e-6, 1e-12);
* ``declared``: the same with :class:`cotk_repro.records.tolerances.ToleranceRules` (each key's declared tolerance);
* ``overlapped``: as ``reproduce`` does it: :meth:`ToleranceRules.prefetch` before a 0.3 s entry runs (a sleep, which
  like waiting on the entry's process releases the GIL), joined after it; the figure is the time beyond the entry's.

Key sets: ``unregistered`` (``tokens``, ``score``: the keys of benchmarks/reproduce.py's project; no metric module
is imported), ``bleu`` (imports the BLEU module and numpy), ``mixed`` (``bleu``, ``rouge-l``, ``distinct-2``,
``fw-bleu``, ``coherence``).

    python benchmarks/tolerance_lookup.py [--runs N] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

KEYS = {
    "unregistered": ["tokens", "score"],
    "bleu": ["bleu"],
    "mixed": ["bleu", "rouge-l", "distinct-2", "fw-bleu", "coherence"],
}

CHILD = """
import json, sys, time
import cotk_repro.reproduce.core
from cotk_repro.plugins import get_plugins
get_plugins().registry("metric")
keys = json.loads(sys.argv[2])
results = {k: {"value": 0.5, "hash": "h"} for k in keys}
t = time.perf_counter()
from cotk_repro.records.diffing import compare_results
entry = 0.0
if sys.argv[1] in ("declared", "overlapped"):
    from cotk_repro.records.tolerances import ToleranceRules
    rules = ToleranceRules()
    if sys.argv[1] == "overlapped":
        thread = rules.prefetch(keys)
        entry = 0.3
        time.sleep(entry)
        thread.join()
else:
    rules = lambda key: (1e-6, 1e-12)
compare_results(results, results, rules)
print(time.perf_counter() - t - entry)
"""


def measure(mode: str, keys: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", CHILD, mode, json.dumps(keys)], capture_output=True, text=True, check=True
        )
        times.append(float(out.stdout.strip().splitlines()[-1]))
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per figure (median; default 5)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    figures = {
        name: {mode: measure(mode, keys, args.runs) for mode in ("peer", "declared", "overlapped")}
        for name, keys in KEYS.items()
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    for name, f in figures.items():
        print(
            f"{name:13s} peer (fixed tolerance) {f['peer'] * 1000:8.2f} ms   "
            f"declared tolerances {f['declared'] * 1000:8.2f} ms   "
            f"overlapped with a 0.3 s entry {f['overlapped'] * 1000:8.2f} ms beyond it"
        )


if __name__ == "__main__":
    main()
