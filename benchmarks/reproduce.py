"""Time of `cotk-repro reproduce` on a small published project, per runtime, cold and warm.

A small project (the one of tests/test_reproduce_support.py: ~20 recorded packages, an entry that
counts tokens and writes two metrics) is recorded and published to a local bare remote, then
reproduced with each runtime:

* cold: empty cotk-repro caches (``COTK_REPRO_CACHE`` points at a fresh folder: no wheelhouse,
  no virtual environment, no image-env cache) and no pip or uv cache (``PIP_NO_CACHE_DIR=1``,
  ``UV_NO_CACHE=1``), so the wheels are really downloaded; for docker the base image gets a tag of
  its own, so the image key is new and the image is really built (Docker's layer cache can still
  serve layers that an earlier build of the same content left; the script says how many
  cotk-repro images exist);
* warm: the same command again, ``--warm-runs`` times (median), everything cached;
* docker-sandbox (cold only, with docker): a record of a project whose checkout holds a small
  package recorded as an editable install, so its wheel is built in the sandbox (a container
  without network) before the image build: the cost of building a package safely.

Each step's time comes from the CLI's own "steps:" line (stderr); the total is the wall time of the
whole `cotk-repro reproduce` process. Overhead = total - the entry's own run time (the entry run
directly with the recording Python on this host, median of 3). Targets (issue 10): warm docker
overhead <= 1.5 s, warm venv overhead <= 1 s. The host runtimes get ``--trust-remote-code``
(the project is the benchmark's own). Images and tags it creates are removed at the end.

    python benchmarks/reproduce.py [--runtimes venv,docker] [--base-image IMG] [--warm-runs N] [--json]

``--base-image`` defaults to $COTK_REPRO_TEST_BASE_IMAGE, then $COTK_REPRO_BASE_IMAGE, else the
recorded ``python:X.Y-slim`` (which Docker must then be able to find or pull).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # the published-project helpers of the test suite

TARGETS = {"docker": 1.5, "venv": 1.0}
#: the package of the docker-sandbox project, built in the sandbox from the checkout
SANDBOX_FILES = {
    "benchpkg/pyproject.toml": '[build-system]\nrequires = ["setuptools>=61"]\n'
    'build-backend = "setuptools.build_meta"\n\n'
    '[project]\nname = "benchpkg"\nversion = "1.0"\n',
    "benchpkg/benchpkg/__init__.py": "VALUE = 1\n",
}
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}
STEP = re.compile(r"^(?P<name>.*?) (?:(?P<s>\d+(?:\.\d+)?)s(?: \((?P<status>.*)\))?|skipped(?: \((?P<why>.*)\))?)$")


def parse_steps(stderr: str) -> list[dict]:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip().startswith("steps:")]
    if not lines:
        return []
    steps = []
    for part in lines[-1].removeprefix("steps:").strip().split(", "):
        m = STEP.match(part.strip())
        if m and m["s"] is None:
            steps.append({"step": m["name"], "seconds": 0.0, "status": "skipped", "reason": m["why"]})
        elif m:
            steps.append({"step": m["name"], "seconds": float(m["s"]), "status": m["status"] or "ok"})
    return steps


def reproduce(bare: Path, record: str, runtime: str, base_image: str | None, env: dict, workdir: Path) -> dict:
    verdict_file = workdir / f"verdict-{uuid.uuid4().hex[:8]}.json"
    # the benchmark's records are published without a key
    cmd = [
        sys.executable,
        "-m",
        "cotk_repro",
        "reproduce",
        str(bare),
        "--record",
        record,
        "--runtime",
        runtime,
        "--allow-unsigned",
        "--json",
        str(verdict_file),
    ]
    if runtime == "docker" and base_image:
        cmd += ["--base-image", base_image]
    if runtime == "docker":
        cmd += ["--image-cache", "8"]  # warm runs reuse the image (without a cache it is removed after each verdict)
    if runtime != "docker":
        cmd.append("--trust-remote-code")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env})
    total = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"reproduce --runtime {runtime} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    verdict = json.loads(verdict_file.read_text())
    assert verdict["verdict"] == "reproduced", verdict
    built = re.findall(r"building the Docker image (cotk-repro-reproduce:[0-9a-f]+)", proc.stderr)
    return {
        "total_s": round(total, 3),
        "steps": parse_steps(proc.stderr),
        "rerun_duration_s": verdict["rerun"]["duration_s"],
        "built_images": built,
    }


def entry_seconds(root: Path, python: str, runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([python, "main.py"], cwd=root, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def fmt_steps(steps: list[dict]) -> str:
    from cotk_repro.reproduce.job import describe_steps

    return describe_steps(steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runtimes", default="venv,docker", help="comma-separated runtimes (default venv,docker)")
    parser.add_argument(
        "--base-image",
        default=os.environ.get("COTK_REPRO_TEST_BASE_IMAGE") or os.environ.get("COTK_REPRO_BASE_IMAGE"),
        help="Docker base image",
    )
    parser.add_argument("--warm-runs", type=int, default=3, help="warm runs per runtime (median; default 3)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    runtimes = [r.strip() for r in args.runtimes.split(",") if r.strip()]
    unknown = set(runtimes) - set(TARGETS)
    if unknown:
        parser.error(f"unknown runtime(s): {', '.join(sorted(unknown))} (venv, docker)")

    os.environ.update(GIT_ENV)
    from test_reproduce_support import build_published_project, edited_project, small_venv_python

    base = Path(tempfile.mkdtemp(prefix="cotk-repro-bench-reproduce-"))
    client = bench_tag = None
    built: list[str] = []
    figures: dict = {"cpu_count": os.cpu_count(), "runtimes": {}}
    try:
        # XDG dirs of the benchmark's own: no config or token of the user is read
        os.environ["XDG_CONFIG_HOME"] = str(base / "config")
        os.environ["XDG_DATA_HOME"] = str(base / "data")
        pub = build_published_project(base / "project", modes={"ok": []})
        record = pub["records"]["ok"]["id"]
        entry_s = entry_seconds(pub["root"], small_venv_python())
        figures["entry_s"] = round(entry_s, 3)
        base_image = args.base_image
        if "docker" in runtimes:
            import docker

            client = docker.from_env()
            figures["existing_cotk_repro_images"] = len(client.images.list(name="cotk-repro-reproduce"))
            if base_image:  # a tag of its own: the image key is new, the image really gets built
                bench_tag = f"cotk-repro-bench-base:{uuid.uuid4().hex[:12]}"
                client.images.get(base_image).tag(*bench_tag.split(":"))
                base_image = bench_tag
        for runtime in runtimes:
            cache = base / f"cache-{runtime}"
            env = {"COTK_REPRO_CACHE": str(cache)}
            no_caches = {**env, "PIP_NO_CACHE_DIR": "1", "UV_NO_CACHE": "1"}
            cold = reproduce(pub["bare"], record, runtime, base_image, no_caches, base)
            built += cold["built_images"]
            warm_runs = []
            for _ in range(max(1, args.warm_runs)):
                warm_runs.append(reproduce(pub["bare"], record, runtime, base_image, env, base))
                built += warm_runs[-1]["built_images"]
            warm = sorted(warm_runs, key=lambda r: r["total_s"])[len(warm_runs) // 2]  # the median run
            figures["runtimes"][runtime] = {
                "cold": {**cold, "overhead_s": round(cold["total_s"] - entry_s, 3)},
                "warm": {
                    **warm,
                    "overhead_s": round(warm["total_s"] - entry_s, 3),
                    "totals_s": [r["total_s"] for r in warm_runs],
                },
                "target_warm_overhead_s": TARGETS[runtime],
                "within_target": warm["total_s"] - entry_s <= TARGETS[runtime],
            }
        if "docker" in runtimes:  # a package built in the sandbox, cold

            def with_benchpkg(rec):
                rec["environment"]["packages"].append({"name": "benchpkg", "version": "1.0", "install": "editable"})

            files = {
                "main.py": (pub["root"] / "main.py").read_text(),
                "refs.txt": (pub["root"] / "refs.txt").read_text(),
                **SANDBOX_FILES,
            }
            sb = edited_project(base / "sandbox", "sandboxed", files, with_benchpkg)
            env = {"COTK_REPRO_CACHE": str(base / "cache-docker-sandbox"), "PIP_NO_CACHE_DIR": "1"}
            cold = reproduce(sb["bare"], sb["record"]["id"], "docker", base_image, env, base)
            built += cold["built_images"]
            figures["runtimes"]["docker-sandbox"] = {
                "cold": {**cold, "overhead_s": round(cold["total_s"] - entry_s, 3)}
            }
    finally:
        if client is not None:
            for tag in set(built):
                try:
                    client.images.remove(tag)
                except Exception:
                    pass
            if bench_tag:
                try:
                    client.images.remove(bench_tag)
                except Exception:
                    pass
        shutil.rmtree(base, ignore_errors=True)

    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(
        f"entry alone (python main.py on this host, median of 3): {figures['entry_s']:.3f} s; "
        f"{figures['cpu_count']} CPUs"
    )
    if "existing_cotk_repro_images" in figures:
        print(
            f"cotk-repro images already in the Docker engine (their layers may serve the cold build): "
            f"{figures['existing_cotk_repro_images']}"
        )
    for runtime, f in figures["runtimes"].items():
        for phase in [p for p in ("cold", "warm") if p in f]:
            r = f[phase]
            extra = f"  (warm runs: {', '.join(f'{t:.2f}' for t in r['totals_s'])} s)" if phase == "warm" else ""
            print(
                f"{runtime:<6} {phase}: total {r['total_s']:6.2f} s, overhead {r['overhead_s']:6.2f} s, "
                f"rerun (entry in its runtime) {r['rerun_duration_s']:.2f} s{extra}"
            )
            print(f"       steps: {fmt_steps(r['steps'])}")
        if "warm" not in f:
            continue
        target = f["target_warm_overhead_s"]
        print(
            f"{runtime:<6} warm overhead {f['warm']['overhead_s']:.2f} s: target <= {target:g} s "
            f"{'met' if f['within_target'] else 'NOT met'}"
        )


if __name__ == "__main__":
    main()
