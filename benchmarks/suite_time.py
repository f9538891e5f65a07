"""The suite's time beside the previous run's: is a change adding minutes?

Every run of the tests writes ``test-artifacts/durations.json`` (tests/suite_report.py: each test's setup + call +
teardown seconds and CPU seconds, the run's wall time and worker count). This script compares such a run with the summary
committed in ``benchmarks/suite-durations.json`` (the run the last change measured), so a commit that adds minutes
shows it in its own diff:

    python benchmarks/suite_time.py                      # this run against the committed summary
    python benchmarks/suite_time.py --against test-artifacts/durations.previous.json   # against the run before
    python benchmarks/suite_time.py --update             # commit this run's summary as the new reference
    python benchmarks/suite_time.py --json

It prints wall time, test time (the sum over tests; with N workers wall is about test time / N), the test count,
the time of the quick loop (the tests not marked slow; those are named in the summary), each file's total beside
the reference's, and the tests that grew or appeared the most. Tests over 30 s that are not marked ``slow`` are
listed: the quick loop (``-m "not slow"``) must stay within 5 minutes.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUMMARY = ROOT / "benchmarks" / "suite-durations.json"
SLOW_LIMIT = 30.0  # a test over this is marked slow in its file, with the reason
QUICK_LIMIT = 5.0  # a test measured over this is left out of the quick loop too (tests/conftest.py)
EXPECTED_FROM = 1.0  # tests from this long on are named with their seconds (the order xdist deals them out in)


def _base(nodeid: str) -> str:
    return nodeid.split("@", 1)[0]  # xdist's "@group" suffix


def load_run(path: Path) -> dict:
    data = json.loads(path.read_text(encoding="utf-8"))
    tests = {_base(k): v for k, v in data.get("tests", {}).items()}
    return {"wall_seconds": data.get("wall_seconds"), "workers": data.get("workers", 0), "tests": tests}


def summarize(run: dict) -> dict:
    tests = run["tests"]
    files: dict[str, float] = defaultdict(float)
    for nodeid, v in tests.items():
        files[nodeid.split("::", 1)[0]] += v["seconds"]
    slowest = sorted(tests.items(), key=lambda kv: -kv[1]["seconds"])[:60]
    return {
        "wall_seconds": run["wall_seconds"],
        "workers": run["workers"],
        "tests": len(tests),
        "passed": sum(1 for v in tests.values() if v.get("outcome") == "passed"),
        "test_seconds": round(sum(v["seconds"] for v in tests.values()), 1),
        # the CPU the tests used (their own and their waited-for children's; not the Docker engine's): test time
        # well above it is waiting, which more workers than cores would overlap
        "cpu_seconds": round(sum(v.get("cpu_seconds", 0.0) for v in tests.values()), 1),
        "quick_loop_test_seconds": round(sum(v["seconds"] for v in tests.values() if not v.get("slow")), 1),
        "files": {k: round(v, 1) for k, v in sorted(files.items())},
        "slowest": {k: round(v["seconds"], 1) for k, v in slowest},
        # every test over a second: tests/conftest.py deals the longest work out first to pytest-xdist's workers
        "expected_seconds": {
            k: round(v["seconds"], 1) for k, v in sorted(tests.items()) if v["seconds"] >= EXPECTED_FROM
        },
        # the tests the quick loop leaves out besides those marked slow (tests/conftest.py reads this)
        "quick_loop_leaves_out": {
            k: round(v["seconds"], 1)
            for k, v in sorted(tests.items())
            if v["seconds"] > QUICK_LIMIT and (not v.get("slow") or v.get("measured_slow"))
        },
    }


def compare(now: dict, ref: dict) -> list[str]:
    lines = []

    def row(what: str, a, b, unit: str = "") -> None:
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b:
            lines.append(f"{what:<28} {a:>10.1f}{unit} {b:>10.1f}{unit}  {a / b:5.2f}x")
        elif isinstance(a, float):  # nothing to compare with (the reference did not measure it)
            lines.append(f"{what:<28} {a:>10.1f}{unit} {'-':>10}{unit}")
        else:
            lines.append(f"{what:<28} {a!s:>10}{unit} {b!s:>10}{unit}")

    lines.append(f"{'':<28} {'this run':>11} {'reference':>11}")
    row("wall (min)", (now["wall_seconds"] or 0) / 60, (ref.get("wall_seconds") or 0) / 60)
    row("test time (min)", now["test_seconds"] / 60, ref.get("test_seconds", 0) / 60)
    row("  of it not slow (min)", now["quick_loop_test_seconds"] / 60, ref.get("quick_loop_test_seconds", 0) / 60)
    row("CPU of the tests (min)", now["cpu_seconds"] / 60, ref.get("cpu_seconds", 0) / 60)
    lines.append(f"{'workers':<28} {now['workers']:>11} {ref.get('workers', '?'):>11}")
    lines.append(
        f"{'tests (passed)':<28} {now['tests']:>5} ({now['passed']}) {ref.get('tests', '?'):>5} ({ref.get('passed', '?')})"
    )
    grew = []
    for f, secs in now["files"].items():
        before = ref.get("files", {}).get(f, 0.0)
        if secs - before > 10:
            grew.append((secs - before, f, secs, before))
    if grew:
        lines.append("files that grew by more than 10 s:")
        for d, f, secs, before in sorted(grew, reverse=True)[:15]:
            lines.append(f"  +{d:7.1f} s  {f} ({before:.1f} -> {secs:.1f} s)")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", nargs="?", default=str(ROOT / "test-artifacts" / "durations.json"))
    ap.add_argument("--against", help="another run's durations.json (default: the committed summary)")
    ap.add_argument("--update", action="store_true", help="write this run's summary to benchmarks/suite-durations.json")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    path = Path(args.run)
    if not path.is_file():
        print(f"error: no run at {path}: run the tests first (bash scripts/test.sh)", file=sys.stderr)
        return 2
    run = load_run(path)
    now = summarize(run)
    if args.against:
        ref = summarize(load_run(Path(args.against)))
    elif SUMMARY.is_file():
        ref = json.loads(SUMMARY.read_text(encoding="utf-8"))
    else:
        ref = {}
    unmarked = sorted(
        (v["seconds"], k) for k, v in run["tests"].items() if v["seconds"] > SLOW_LIMIT and not v.get("slow", True)
    )
    if args.json:
        print(json.dumps({"run": now, "reference": ref}, indent=1))
    else:
        print("\n".join(compare(now, ref)))
        if unmarked:
            print("over 30 s and not marked slow:")
            for secs, k in reversed(unmarked):
                print(f"  {secs:7.1f} s  {k}")
    if args.update:
        SUMMARY.write_text(json.dumps(now, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {SUMMARY.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
