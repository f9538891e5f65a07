"""Peak memory and time of parsing a stranger's JSON: core/jsonbudget.loads beside plain json.loads, in the same run.

Each shape of issue 39 is written to a file, then read back in a fresh child process (so the figures do not
add up) by each variant; the child reports its peak RSS (``VmHWM``) and the parse time:

* ``budget``: :func:`cotk_repro.core.jsonbudget.loads` (what every stranger's JSON goes through);
* ``json.loads``: the standard library alone (what the reproducer did before the budgets: the peer).

Shapes: ``empty-objects`` (``[{},{},...]``: 20 million dicts per 60 MB), ``deep`` (200,000 nested lists: a
RecursionError for the peer), ``strings`` (a 60 MB string: the budget must cost no more than the peer here), and
``record-like`` (a record-sized document of many small objects, within every budget: the scan's overhead).
``--scale`` shrinks the 60 MB shapes (the peer needs about 35 bytes of memory per byte of ``empty-objects``).

    python benchmarks/parse_budgets.py [--scale 0.25] [--json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

MiB = 1024 * 1024
CHILD = """
import json, sys, time
import numpy  # the scan's one import, paid once per process: not timed (nor for the peer)
from cotk_repro.core.jsonbudget import loads, JSONBudgetError
data = open(sys.argv[2], "rb").read()
t0 = time.perf_counter()
try:
    if sys.argv[1] == "budget":
        try:
            loads(data, what="the file")
            outcome = "parsed"
        except JSONBudgetError as exc:
            outcome = "refused: " + exc.message[:80]
    else:
        json.loads(data)
        outcome = "parsed"
except RecursionError:
    outcome = "RecursionError"
seconds = time.perf_counter() - t0
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]
print(json.dumps({"outcome": outcome, "seconds": round(seconds, 3), "peak_mb": round(int(hwm) / 1024)}))
"""


def write_shape(shape: str, path: Path, size: int) -> None:
    with open(path, "wb") as fh:
        if shape == "empty-objects":
            block = b"{}," * (MiB // 3)
            fh.write(b"[")
            for _ in range(max(1, size // len(block))):
                fh.write(block)
            fh.write(b"{}]")
        elif shape == "deep":
            fh.write(b"[" * 200_000 + b"]" * 200_000)
        elif shape == "strings":
            fh.write(b'{"x": "' + b"A" * size + b'"}')
        else:  # record-like: packages and results, as a big record has them
            doc = {
                "packages": [{"name": f"pkg{i}", "version": f"1.{i}.0"} for i in range(20_000)],
                "results": {f"m{i}": {"value": i / 7, "hash": "ab" * 32} for i in range(5_000)},
            }
            fh.write(json.dumps(doc).encode())


def measure(variant: str, path: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, variant, str(path)], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        return {"outcome": f"exited {proc.returncode}", "stderr": proc.stderr[-300:]}
    return json.loads(proc.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of 60 MB for the big shapes (default 1)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    size = int(60 * MiB * args.scale)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for shape in ("empty-objects", "deep", "strings", "record-like"):
            path = Path(tmp) / f"{shape}.json"
            write_shape(shape, path, size)
            for variant in ("budget", "json.loads"):
                rows.append(
                    {"shape": shape, "bytes": path.stat().st_size, "variant": variant, **measure(variant, path)}
                )
            path.unlink()
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'shape':14} {'bytes':>12} {'variant':11} {'peak MB':>8} {'seconds':>8}  outcome")
    for r in rows:
        print(
            f"{r['shape']:14} {r['bytes']:>12,} {r['variant']:11} {r.get('peak_mb', '-'):>8} "
            f"{r.get('seconds', '-'):>8}  {r['outcome']}"
        )


if __name__ == "__main__":
    main()
