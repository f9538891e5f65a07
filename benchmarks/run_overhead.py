"""Overhead of `cotk-repro run` over running the entry directly.

Whole-process wall time of `cotk-repro run` on an entry that does nothing (it
only writes a one-metric result file) against `python entry.py` on the same
entry, measured in the same run, alternating, median of several runs; and
`cotk-repro --help` beside a bare `python -c pass`.
Targets: run overhead <= 0.2 s (issue 18, tighter than issue 13's 0.25 s);
`cotk-repro --help` <= 0.15 s.

    python benchmarks/run_overhead.py [--runs N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 0.2
HELP_TARGET_S = 0.15
ENTRY = 'import json\njson.dump({"x": 1.0}, open("result.json", "w"))\n'


def _git(root: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.invalid",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    }
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env=env)


def make_project(base: Path) -> Path:
    root = base / "bench-project"
    root.mkdir()
    (root / "main.py").write_text(ENTRY)
    (root / ".gitignore").write_text(".cotk-repro/\nresult.json\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "bench")
    return root


def bench_env(base: Path) -> dict[str, str]:
    """Byte code cached (outside the repository), as an installed package has it, for both commands:
    with PYTHONDONTWRITEBYTECODE set (as on the dev machines), an editable install would compile
    every module of cotk-repro at each start, which no user's installed copy does."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(base / "pycache")
    return env


def timed(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.decode(errors='replace')}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=9, help="measured runs of each command (default 9)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    # the console script of this interpreter's install; PATH may hold a wrapper instead (a pyenv shim is a bash
    # script that starts pyenv first: ~30 ms that are pyenv's, not cotk-repro's)
    beside = Path(sys.executable).with_name("cotk-repro")
    cli = str(beside) if beside.is_file() else shutil.which("cotk-repro")
    cotk_cmd = [cli, "run"] if cli else [sys.executable, "-m", "cotk_repro", "run"]
    base = Path(tempfile.mkdtemp(prefix="cotk-repro-bench-"))
    try:
        root = make_project(base)
        direct_cmd = [sys.executable, "main.py"]
        env = bench_env(base)
        # warm-up (file system caches, .pyc files)
        timed(direct_cmd, root, env)
        timed(cotk_cmd, root, env)
        help_cmd = [*cotk_cmd[:-1], "--help"]
        bare_cmd = [sys.executable, "-c", "pass"]
        direct, cotk, helps, bare = [], [], [], []
        for _ in range(args.runs):  # alternate, so that load on the machine hits all alike
            direct.append(timed(direct_cmd, root, env))
            cotk.append(timed(cotk_cmd, root, env))
            bare.append(timed(bare_cmd, root, env))
            helps.append(timed(help_cmd, root, env))
        records = len(list((root / ".cotk-repro" / "runs").iterdir()))
    finally:
        shutil.rmtree(base, ignore_errors=True)

    med_direct, med_cotk = statistics.median(direct), statistics.median(cotk)
    overhead = med_cotk - med_direct
    med_help, med_bare = statistics.median(helps), statistics.median(bare)
    figures = {
        "runs": args.runs,
        "command": " ".join(Path(c).name if i == 0 else c for i, c in enumerate(cotk_cmd)),
        "python_entry_median_s": round(med_direct, 4),
        "cotk_repro_run_median_s": round(med_cotk, 4),
        "overhead_s": round(overhead, 4),
        "target_s": TARGET_S,
        "within_target": overhead <= TARGET_S,
        "records_written": records,
        "python_bare_median_s": round(med_bare, 4),
        "help_median_s": round(med_help, 4),
        "help_target_s": HELP_TARGET_S,
        "help_within_target": med_help <= HELP_TARGET_S,
        "cpu_count": os.cpu_count(),
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"python main.py (peer)        median {med_direct:.3f} s  (min {min(direct):.3f}, max {max(direct):.3f})")
    print(f"{figures['command']:<28} median {med_cotk:.3f} s  (min {min(cotk):.3f}, max {max(cotk):.3f})")
    print(
        f"overhead                     {overhead:.3f} s  (target <= {TARGET_S} s: "
        f"{'met' if overhead <= TARGET_S else 'NOT met'}; {args.runs} runs each, {records} records written)"
    )
    print(f"python -c pass (peer)        median {med_bare:.3f} s")
    print(
        f"cotk-repro --help            median {med_help:.3f} s  (target <= {HELP_TARGET_S} s: "
        f"{'met' if med_help <= HELP_TARGET_S else 'NOT met'})"
    )


if __name__ == "__main__":
    main()
