"""Start-up time of the command line with and without cli/_speedups.py, in the same run.

Whole-process wall time, best of N (alternating the variants each round, so load hits all alike), of
`cotk-repro --version`, `--help`, `evaluate --help` (help rendered: the help cache off, and replayed from it)
and `run` on an entry that does nothing, for three builds of the CLI:

* ``shipped``: as installed (Typer's str/bool coercion patched, rich.markdown and rich.traceback deferred);
* ``no-coercion-patch``: ``_speedups.install`` does nothing (Typer coerces through pydantic);
* ``no-speedups``: neither (``typer.rich_utils`` imported as Typer does).

`run`'s overhead over `python main.py` is what the start-up budget is about (benchmarks/run_overhead.py,
TARGET_S). Each command runs as ``python -c`` calling the console script's function, so every variant pays the
same interpreter start.

    python benchmarks/cli_startup.py [--runs N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_overhead import TARGET_S, bench_env, make_project, timed

VARIANTS = {
    "shipped": "",
    "no-coercion-patch": "import cotk_repro.cli._speedups as sp; sp.install = lambda: False\n",
    "no-speedups": (
        "import cotk_repro.cli._speedups as sp, importlib; sp.install = lambda: False; "
        "sp.import_rich_help = lambda: importlib.import_module('typer.rich_utils')\n"
    ),
}
LAUNCH = "import sys; sys.argv = ['cotk-repro', *sys.argv[1:]]\nfrom cotk_repro.cli import launch\nlaunch()\n"
COMMANDS = {
    "--version": (["--version"], False),
    "--help (rendered)": (["--help"], False),
    "evaluate --help (rendered)": (["evaluate", "--help"], False),
    "--help (help cache)": (["--help"], True),
    "evaluate --help (help cache)": (["evaluate", "--help"], True),
    "run": (["run", "-q"], False),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10, help="measured runs of each command (default 10)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="cotk-repro-startup-"))
    try:
        root = make_project(base)
        env = bench_env(base)
        env["XDG_CACHE_HOME"] = str(base / "cache")  # a help cache of its own
        env["COLUMNS"] = "100"
        no_cache = {**env, "COTK_REPRO_HELP_CACHE": "0"}
        direct = [sys.executable, "main.py"]
        times: dict[str, dict[str, list[float]]] = {c: {v: [] for v in VARIANTS} for c in COMMANDS}
        times["python main.py (peer)"] = {"-": []}
        for warm_up in (True, *([False] * args.runs)):
            for command, (argv, cached) in COMMANDS.items():
                for variant, prelude in VARIANTS.items():
                    t = timed([sys.executable, "-c", prelude + LAUNCH, *argv], root, env if cached else no_cache)
                    if not warm_up:
                        times[command][variant].append(t)
            t = timed(direct, root, env)
            if not warm_up:
                times["python main.py (peer)"]["-"].append(t)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    best = {c: {v: round(min(ts), 4) for v, ts in vs.items()} for c, vs in times.items()}
    peer = best["python main.py (peer)"]["-"]
    figures = {
        "runs": args.runs,
        "best_s": best,
        "load_average": os.getloadavg(),
        "cpu_count": os.cpu_count(),
        "run_overhead_s": {v: round(best["run"][v] - peer, 4) for v in VARIANTS},
        "target_s": TARGET_S,
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"best of {args.runs}, seconds (load average {figures['load_average'][0]:.2f}, {figures['cpu_count']} CPUs)")
    print(f"{'':32}" + "".join(f"{v:>20}" for v in VARIANTS))
    for command in COMMANDS:
        print(f"{command:32}" + "".join(f"{best[command][v]:>20.3f}" for v in VARIANTS))
    print(f"{'python main.py (peer)':32}{peer:>20.3f}")
    print(
        f"{'run overhead (target ' + str(TARGET_S) + ' s)':32}"
        + "".join(f"{figures['run_overhead_s'][v]:>20.3f}" for v in VARIANTS)
    )


if __name__ == "__main__":
    main()
