"""The newcomer's path, timed: from a fresh virtual environment to the demo's verdict, step by step.

What the README's first command asks of someone who just cloned the repository (`pip install -e . &&
cotk-repro demo`), in a fresh `python -m venv` with a pip cache of its own (cold: nothing downloaded before),
its own HOME and user directories:

1. ``python -m venv``;
2. ``pip install -e .`` of the core (resolving and installing its requirements);
3. ``cotk-repro demo --json`` (no serving), with the demo's own steps: scaffold, run, dashboard, publish,
   reproduce.

The peer, in the same run and the same conditions: a fresh venv and ``pip install sacrebleu`` (an evaluation
package a newcomer to the field installs first), then its first score (``sacrebleu`` on two lines).

    python benchmarks/newcomer.py [--runtime venv|docker] [--warm-cache] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def timed(cmd: list[str], env: dict[str, str], cwd: Path, stdin: str | None = None) -> tuple[float, str]:
    t = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, input=stdin, capture_output=True, text=True)
    elapsed = time.perf_counter() - t
    if proc.returncode:
        sys.exit(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return elapsed, proc.stdout


def fresh_env(base: Path, warm_cache: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"}}
    home = base / "home"
    home.mkdir(parents=True, exist_ok=True)
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local/share"),
        XDG_CACHE_HOME=str(home / ".cache"),
        GIT_AUTHOR_NAME="Newcomer",
        GIT_AUTHOR_EMAIL="newcomer@example.invalid",
        GIT_COMMITTER_NAME="Newcomer",
        GIT_COMMITTER_EMAIL="newcomer@example.invalid",
    )
    if not warm_cache:
        env["PIP_CACHE_DIR"] = str(base / "pip-cache")
    return env


def newcomer(base: Path, python: str, runtime: str | None, warm_cache: bool) -> dict[str, Any]:
    env = fresh_env(base, warm_cache)
    venv = base / "venv"
    figures: dict[str, Any] = {}
    figures["venv creation"], _ = timed([python, "-m", "venv", str(venv)], env, base)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    env["VIRTUAL_ENV"] = str(venv)
    figures["pip install -e . (the core)"], _ = timed(
        [str(venv / "bin" / "pip"), "install", "-e", str(REPO)], env, base
    )
    demo = [str(venv / "bin" / "cotk-repro"), "demo", "--json"]
    if runtime:
        demo += ["--runtime", runtime]
    wall, out = timed(demo, env, base)
    summary = json.loads(out)
    for step, seconds in summary.get("timings_s", {}).items():
        if step != "total":
            figures[f"demo: {step}"] = seconds
    figures["demo (wall, with start-up)"] = wall
    verdict = summary.get("reproduction")
    verdict = verdict.get("verdict") if isinstance(verdict, dict) else verdict
    figures["verdict"] = verdict == "reproduced"
    figures["runtime"] = summary.get("runtime")
    return figures


def peer(base: Path, python: str, warm_cache: bool) -> dict[str, Any]:
    env = fresh_env(base, warm_cache)
    venv = base / "venv"
    figures: dict[str, Any] = {}
    figures["venv creation"], _ = timed([python, "-m", "venv", str(venv)], env, base)
    figures["pip install sacrebleu"], _ = timed([str(venv / "bin" / "pip"), "install", "sacrebleu"], env, base)
    (base / "ref.txt").write_text("the cat sat on the mat .\na dog barked .\n")
    figures["first score (sacrebleu CLI)"], _ = timed(
        [str(venv / "bin" / "sacrebleu"), str(base / "ref.txt")],
        env,
        base,
        stdin="the cat sat on a mat .\na dog barked .\n",
    )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--runtime", choices=["venv", "docker"], help="the demo's reproduction runtime (default: its own choice)"
    )
    parser.add_argument("--warm-cache", action="store_true", help="use your pip cache instead of an empty one")
    parser.add_argument("--python", default=sys.executable, help="the interpreter the venvs are made from")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="cotk-repro-newcomer-"))
    try:
        ours = newcomer(base / "cotk-repro", args.python, args.runtime, args.warm_cache)
        theirs = peer(base / "peer", args.python, args.warm_cache)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if args.json:
        print(json.dumps({"cotk-repro": ours, "peer": theirs}, indent=2))
        return
    reached = ours.pop("verdict")
    runtime = ours.pop("runtime")
    total = sum(v for k, v in ours.items() if not k.startswith("demo: "))
    cache = "warm" if args.warm_cache else "cold"
    print(f"newcomer's path (fresh venv, {cache} pip cache, demo reproducing with {runtime}), seconds:")
    for step, seconds in ours.items():
        print(f"  {step:<34} {seconds:8.1f}")
    print(f"  {'to the verdict (' + ('reproduced' if reached else 'NOT reproduced') + ')':<34} {total:8.1f}")
    print("peer, same run: a fresh venv and pip install sacrebleu, seconds:")
    for step, seconds in theirs.items():
        print(f"  {step:<34} {seconds:8.1f}")
    print(f"  {'to the first score':<34} {sum(theirs.values()):8.1f}")


if __name__ == "__main__":
    main()
