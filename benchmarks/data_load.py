"""Dataloader throughput: load + tokenize (``nltk``) + build vocab + all hash codes, against CoTK 0.1.0.

    python3 benchmarks/data_load.py                   # 1x (coco_train + coco_test, ~20k sentences) and 50x (~1M)
    python3 benchmarks/data_load.py --scale 10 --skip-cotk
    python3 benchmarks/data_load.py --json results.json --repeat 3

The dataset folder is built in a temporary directory from the Texygen folder ``--data`` (see benchmarks/_data.py):
``train.txt`` = ``coco_train.txt``, ``dev.txt`` = the first ``--dev-lines`` lines of
``coco_train.txt`` (Texygen's COCO has no dev split), ``test.txt`` = ``coco_test.txt``; the
larger size concatenates each file ``--scale`` times. Both tools read the SAME folder.

Each measurement runs in its own subprocess, after one untimed warm-up run per tool (bytecode
is cached under ``~/.cache/cotk-repro/bench-pycache``, as an installed package would have it):

* seconds: wall time from the loader call to all five hash codes (after the imports);
* cpu s: the subprocess's CPU time over the same span, its worker processes included (less
  sensitive to other jobs on a shared machine; the load average is printed with each size);
* process s: wall time of the whole subprocess (interpreter start-up and imports included);
* peak MB: the subprocess's ``ru_maxrss`` (from ``os.wait4``).

With ``--repeat N`` each figure is the best of N runs (memory: the worst). Tokens are counted
the same way for both tools: NLTK's WordPunct tokens (``\\w+|[^\\w\\s]+``) over every line
of every split; tokens/s = tokens / seconds.

CoTK 0.1.0 runs from its own virtual environment (``--cotk-venv``, default
``~/.cache/cotk-repro/bench-cotk-venv``), created with ``pip install cotk==0.1.0`` when missing.
Both loaders get CoTK ``MSCOCO``'s settings: tokenizer ``nltk``, ``min_frequent_vocab_times=10``,
``min_rare_vocab_times=0``, ``max_sent_length=50``, no lowercasing. If CoTK does not finish a
size within ``--cotk-timeout`` seconds it is measured at ``--cotk-fallback-scale`` and its figures
are extrapolated (marked ``~``): time proportional to the size, memory linear through the two sizes
it finished.

Targets (issue 18, after issue 3's 1M tokens/s, 5x and less memory): >= 1.5M tokens/s end to end, >= 8x faster
than CoTK, peak memory at most half of CoTK's. The CPU time includes the helper process that a load above 512 KiB
forks when a CPU is idle (cotk_repro/data/chunks.py); the peak is the loading process's.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
from _data import add_data_option, require  # noqa: E402  (benchmarks/ is on sys.path)

DEFAULT_VENV = Path(os.environ.get("COTK_BENCH_VENV", Path.home() / ".cache" / "cotk-repro" / "bench-cotk-venv"))
PYCACHE = Path.home() / ".cache" / "cotk-repro" / "bench-pycache"
COTK_VERSION = "0.1.0"
TARGET_TOKENS_PER_S = 1_500_000
TARGET_SPEEDUP = 8.0
TARGET_MEMORY_RATIO = 0.5

SETTINGS = {"min_frequent_vocab_times": 10, "min_rare_vocab_times": 0, "max_sent_length": 50}

# Runs in the measured subprocess: argv = tool, folder. Prints one JSON line.
CHILD = r"""
import json, resource, sys, time

def cpu_now():
    # this process and its reaped children (the loader's helper process): the whole CPU the load cost
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + c.ru_utime + c.ru_stime
tool, folder = sys.argv[1], sys.argv[2]
S = json.loads(sys.argv[3])

def vm(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0

if tool == "ours":
    from cotk_repro import data
    import cotk_repro.data.loaders, cotk_repro.data.tokenizers  # the library's modules, as CoTK's below
    base = vm("VmRSS")
    t0, c0 = time.perf_counter(), cpu_now()
    dl = data.load("language-generation", folder, tokenizer="nltk", lowercase=False, **S)
    codes = dict(dl.hash_codes)
    seconds, cpu = time.perf_counter() - t0, cpu_now() - c0
    out = {"codes": codes, "frequent": len(dl.vocab.frequent), "rare": len(dl.vocab.rare),
           "samples": sum(dl.sample_count(s) for s in dl.splits),
           "loader_tokens": sum(dl.token_count(s) for s in dl.splits)}
else:
    import logging
    logging.disable(logging.CRITICAL)
    from cotk.dataloader import MSCOCO
    base = vm("VmRSS")
    t0, c0 = time.perf_counter(), cpu_now()
    dl = MSCOCO(folder, tokenizer="nltk", convert_to_lower_letter=False, **S)
    codes = {"raw": dl.get_raw_data_hash(), "data": dl.get_data_hash(), "vocab": dl.get_vocab_hash(),
             "setting": dl.get_setting_hash(), "general": dl.get_general_hash()}
    seconds, cpu = time.perf_counter() - t0, cpu_now() - c0
    # CoTK's sizes include the four special tokens
    out = {"codes": codes, "frequent": dl.frequent_vocab_size - 4, "rare": dl.all_vocab_size - dl.frequent_vocab_size,
           "samples": sum(len(dl.index[s]) for s in ("train", "dev", "test"))}
out.update(seconds=seconds, cpu=cpu, base_rss=base, peak_rss=vm("VmHWM"))
print("RESULT " + json.dumps(out))
"""

WORDPUNCT = re.compile(r"\w+|[^\w\s]+")


# -- the dataset folder ------------------------------------------------------------------------
def _lines_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    return data if data.endswith(b"\n") or not data else data + b"\n"


def split_texts(data_dir: Path, dev_lines: int) -> dict[str, bytes]:
    train = _lines_bytes(data_dir / "coco_train.txt")
    test = _lines_bytes(data_dir / "coco_test.txt")
    dev = b"".join(train.splitlines(keepends=True)[:dev_lines])
    return {"train": train, "dev": dev, "test": test}


def build_folder(root: Path, texts: dict[str, bytes], scale: int) -> Path:
    folder = root / f"coco-x{scale}"
    folder.mkdir(parents=True, exist_ok=True)
    for split, text in texts.items():
        with open(folder / f"{split}.txt", "wb") as f:
            for _ in range(scale):
                f.write(text)
    return folder


def count_tokens(texts: dict[str, bytes]) -> tuple[int, int]:
    """(sentences, WordPunct tokens) over every line of every split, at scale 1."""
    lines = tokens = 0
    for text in texts.values():
        for line in text.decode("utf-8").splitlines():
            lines += 1
            tokens += len(WORDPUNCT.findall(line))
    return lines, tokens


# -- CoTK's environment ------------------------------------------------------------------------
def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def cotk_installed(py: Path) -> str | None:
    if not py.exists():
        return None
    r = subprocess.run(
        [str(py), "-c", "import importlib.metadata as m, cotk.dataloader; print(m.version('cotk'))"],
        capture_output=True,
        text=True,
    )
    return r.stdout.strip() if r.returncode == 0 else None


def ensure_cotk(venv: Path) -> tuple[Path | None, str]:
    """(python of the venv, message); python is None when CoTK cannot be had."""
    py = venv_python(venv)
    version = cotk_installed(py)
    if version == COTK_VERSION:
        return py, f"CoTK {version} from {venv}"
    print(f"setting up CoTK {COTK_VERSION} in {venv} ...", flush=True)
    try:
        if not py.exists():
            venv.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, text=True)
        r = subprocess.run(
            [str(py), "-m", "pip", "install", "-q", f"cotk=={COTK_VERSION}"], capture_output=True, text=True
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        return None, f"cannot create the venv {venv}: {exc}"
    if r.returncode != 0:
        tail = (r.stderr or r.stdout).strip().splitlines()[-5:]
        return None, "pip install cotk=={} failed:\n    {}".format(COTK_VERSION, "\n    ".join(tail))
    version = cotk_installed(py)
    if version != COTK_VERSION:
        r = subprocess.run([str(py), "-c", "import cotk.dataloader"], capture_output=True, text=True)
        return None, f"CoTK installed but does not import: {(r.stderr.strip().splitlines() or ['?'])[-1]}"
    return py, f"CoTK {version} installed into {venv}"


# -- one measurement ---------------------------------------------------------------------------
def measure(python: str, tool: str, folder: Path, timeout: float | None) -> dict:
    """Run one load in a fresh subprocess; its result plus process wall time and ru_maxrss."""
    env = dict(os.environ)
    # Cache bytecode (outside the repository) as an installed package would have it, so that modules
    # imported lazily inside the timed call are not compiled from source on every run.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    if tool == "ours":
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [python, "-c", CHILD, tool, str(folder), json.dumps(SETTINGS)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=str(folder.parent),
        )
        deadline = None if timeout is None else t0 + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if deadline is not None and time.perf_counter() > deadline:
                proc.kill()
                os.wait4(proc.pid, 0)
                proc.returncode = -9
                return {"timeout": True, "wall": time.perf_counter() - t0}
            time.sleep(0.02)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    result = None
    for line in text.splitlines():
        if line.startswith("RESULT "):
            result = json.loads(line[len("RESULT ") :])
    if proc.returncode != 0 or result is None:
        return {"error": f"{tool} exited {proc.returncode}: " + " | ".join(text.strip().splitlines()[-3:])}
    result["wall"] = wall
    result["maxrss"] = usage.ru_maxrss * 1024  # Linux: KiB
    return result


def best_of(python: str, tool: str, folder: Path, repeat: int, timeout: float | None) -> dict:
    runs = []
    for _ in range(repeat):
        runs.append(measure(python, tool, folder, timeout))
        if "seconds" not in runs[-1]:  # a timeout or an error: do not try again
            break
    if runs[-1].get("timeout"):
        return runs[-1]
    ok = [r for r in runs if "seconds" in r]
    if not ok:
        return runs[0]
    best = min(ok, key=lambda r: r["seconds"])
    best = dict(best)
    best["maxrss"] = max(r["maxrss"] for r in ok)  # memory: the worst run
    best["runs"] = [round(r["seconds"], 3) for r in ok]
    best["cpu"] = min(r["cpu"] for r in ok)
    return best


def extrapolate(small: tuple[int, dict], large: tuple[int, dict], scale: int) -> dict:
    """CoTK's figures at ``scale`` from two smaller measured sizes: time proportional to the size
    from the larger one (conservative: CoTK's time per sentence grows with the size), start-up
    kept as measured, memory linear in the size through both (a fixed base plus a per-sentence part)."""
    (s1, r1), (s2, r2) = small, large
    out: dict = {"extrapolated_from": [s1, s2]}
    out["seconds"] = r2["seconds"] * scale / s2
    out["cpu"] = r2["cpu"] * scale / s2
    out["wall"] = (r2["wall"] - r2["seconds"]) + out["seconds"]
    out["maxrss"] = r2["maxrss"] + (r2["maxrss"] - r1["maxrss"]) / (s2 - s1) * (scale - s2)
    for key in ("frequent", "rare", "codes"):
        out[key] = None
    return out


def _loadavg() -> str:
    try:
        return "/".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


# -- reporting -----------------------------------------------------------------------------------
def mb(n: float) -> str:
    return f"{n / 2**20:,.0f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=int, default=50, help="concatenation factor of the large size (default 50)")
    ap.add_argument("--dev-lines", type=int, default=1000, help="dev.txt = the first N lines of coco_train (1000)")
    add_data_option(ap)
    ap.add_argument("--skip-cotk", action="store_true", help="measure only cotk-repro")
    ap.add_argument("--cotk-venv", type=Path, default=DEFAULT_VENV)
    ap.add_argument(
        "--cotk-timeout",
        type=float,
        default=600.0,
        help="seconds CoTK may take for one size before it is extrapolated (600)",
    )
    ap.add_argument(
        "--cotk-fallback-scale",
        type=int,
        default=None,
        help="size at which to measure CoTK when it times out (default: scale/5)",
    )
    ap.add_argument("--repeat", type=int, default=1, help="runs per tool and size; the fastest counts (1)")
    ap.add_argument("--json", type=Path, default=None, help="also write the results to this file")
    ap.add_argument("--keep", action="store_true", help="keep the generated dataset folders")
    args = ap.parse_args(argv)

    require(args.data, "coco_train.txt", "coco_test.txt")
    scales = sorted({1, max(1, args.scale)})

    cotk_py, cotk_msg = (None, "skipped (--skip-cotk)") if args.skip_cotk else ensure_cotk(args.cotk_venv)
    print(f"CoTK: {cotk_msg}")

    texts = split_texts(args.data, args.dev_lines)
    sents1, tokens1 = count_tokens(texts)
    tmp = Path(tempfile.mkdtemp(prefix="cotk-repro-bench-data-"))
    results: list[dict] = []
    notes: list[str] = []
    try:
        cotk_points: list[tuple[int, dict]] = []
        for scale in scales:
            folder = build_folder(tmp, texts, scale)
            row = {
                "scale": scale,
                "sentences": sents1 * scale,
                "tokens": tokens1 * scale,
                "bytes": sum(len(t) for t in texts.values()) * scale,
            }
            print(
                f"\n[x{scale}] {row['sentences']:,} sentences, {row['tokens']:,} tokens, "
                f"{row['bytes'] / 2**20:.1f} MiB in {folder} (load average {_loadavg()})",
                flush=True,
            )
            if scale == scales[0]:  # warm-up (bytecode cache, page cache), not reported
                measure(sys.executable, "ours", folder, None)
                if cotk_py is not None:
                    measure(str(cotk_py), "cotk", folder, args.cotk_timeout)
            ours = best_of(sys.executable, "ours", folder, args.repeat, None)
            row["ours"] = ours
            if "error" in ours:
                print(f"  cotk-repro failed: {ours['error']}")
            else:
                print(f"  cotk-repro: {ours['seconds']:.2f} s, peak {mb(ours['maxrss'])} MB", flush=True)
                if ours.get("loader_tokens") not in (None, row["tokens"]):
                    notes.append(
                        f"x{scale}: cotk-repro kept {ours['loader_tokens']:,} tokens after "
                        f"max_sent_length={SETTINGS['max_sent_length']} (tokens/s counts {row['tokens']:,})"
                    )
            if cotk_py is not None:
                cotk = best_of(str(cotk_py), "cotk", folder, args.repeat, args.cotk_timeout)
                if cotk.get("timeout"):
                    fb = args.cotk_fallback_scale or max(2, scale // 5)
                    print(
                        f"  CoTK: over {args.cotk_timeout:.0f} s at x{scale}; measuring x{fb} to extrapolate",
                        flush=True,
                    )
                    fb_folder = build_folder(tmp, texts, fb)
                    fb_res = best_of(str(cotk_py), "cotk", fb_folder, 1, None)
                    if not args.keep:
                        shutil.rmtree(fb_folder, ignore_errors=True)
                    if "error" in fb_res or not cotk_points:
                        cotk = {"error": fb_res.get("error", "no smaller size to extrapolate from")}
                    else:
                        cotk = extrapolate(cotk_points[0], (fb, fb_res), scale)
                        notes.append(
                            f"x{scale}: CoTK did not finish within {args.cotk_timeout:.0f} s; its figures "
                            f"(~) are extrapolated: time proportional to the size from x{fb}, memory linear "
                            f"through x{cotk_points[0][0]} and x{fb} "
                            f"(x{fb}: {fb_res['seconds']:.1f} s, {mb(fb_res['maxrss'])} MB)"
                        )
                elif "seconds" in cotk:
                    cotk_points.append((scale, cotk))
                row["cotk"] = cotk
                if "error" in cotk:
                    print(f"  CoTK failed: {cotk['error']}")
                else:
                    est = " (extrapolated)" if "extrapolated_from" in cotk else ""
                    print(f"  CoTK: {cotk['seconds']:.2f} s, peak {mb(cotk['maxrss'])} MB{est}", flush=True)
                    if (
                        cotk.get("frequent") is not None
                        and "error" not in ours
                        and (cotk["frequent"], cotk["rare"]) != (ours["frequent"], ours["rare"])
                    ):
                        notes.append(
                            f"x{scale}: vocabularies differ: cotk-repro |F|={ours['frequent']} "
                            f"|R|={ours['rare']}, CoTK |F|={cotk['frequent']} |R|={cotk['rare']}"
                        )
            if not args.keep:
                shutil.rmtree(folder, ignore_errors=True)
            results.append(row)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"\ndataset folders kept in {tmp}")

    # -- table ------------------------------------------------------------------------------------
    print("\nload + tokenize (nltk) + vocab + 5 hash codes; tokens = WordPunct tokens over train+dev+test")
    header = (
        f"{'size':>5} {'sentences':>10} {'tokens':>11} {'tool':<11} {'seconds':>8} {'tokens/s':>11} "
        f"{'cpu s':>7} {'process s':>9} {'peak MB':>8} {'|F|':>5} {'|R|':>6}"
    )
    print(header)
    print("-" * len(header))
    verdicts = []
    for row in results:
        for tool in ("ours", "cotk"):
            r = row.get(tool)
            if r is None:
                continue
            name = "cotk-repro" if tool == "ours" else "CoTK 0.1.0"
            lead = f"{'x' + str(row['scale']):>5} {row['sentences']:>10,} {row['tokens']:>11,}"
            if "error" in r:
                print(f"{lead} {name:<11} failed")
                continue
            approx = "~" if "extrapolated_from" in r else ""
            r["tokens_per_s"] = row["tokens"] / r["seconds"]
            f_ = "" if r.get("frequent") is None else r["frequent"]
            r_ = "" if r.get("rare") is None else r["rare"]
            print(
                f"{lead} {name:<11} {approx + format(r['seconds'], '.2f'):>8} "
                f"{approx + format(r['tokens_per_s'], ',.0f'):>11} {approx + format(r['cpu'], '.2f'):>7} "
                f"{approx + format(r['wall'], '.2f'):>9} "
                f"{approx + mb(r['maxrss']):>8} {f_:>5} {r_:>6}"
            )
        ours, cotk = row.get("ours", {}), row.get("cotk")
        if "seconds" not in ours:
            continue
        v = {
            "scale": row["scale"],
            "tokens_per_s": ours["tokens_per_s"],
            "tokens_ok": ours["tokens_per_s"] >= TARGET_TOKENS_PER_S,
        }
        if cotk and "seconds" in cotk:
            v.update(
                speedup=cotk["seconds"] / ours["seconds"],
                process_speedup=cotk["wall"] / ours["wall"],
                cpu_speedup=cotk["cpu"] / ours["cpu"],
                mem_ratio=ours["maxrss"] / cotk["maxrss"],
            )
            v.update(
                speed_ok=v["speedup"] >= TARGET_SPEEDUP,
                mem_ok=ours["maxrss"] <= TARGET_MEMORY_RATIO * cotk["maxrss"],
                approx="extrapolated_from" in cotk,
            )
        verdicts.append(v)

    print(f"(machine: {os.cpu_count()} CPUs, load average at the end {_loadavg()})")
    print(
        f"\ntargets: >= {TARGET_TOKENS_PER_S:,} tokens/s; >= {TARGET_SPEEDUP:g}x faster than CoTK; peak memory "
        f"<= {TARGET_MEMORY_RATIO:.0%} of CoTK's"
    )
    for v in verdicts:
        yes = lambda ok: "MET" if ok else "NOT MET"  # noqa: E731
        line = f"  x{v['scale']:<4} {v['tokens_per_s']:>11,.0f} tokens/s: {yes(v['tokens_ok'])}"
        if "speedup" in v:
            a = "~" if v["approx"] else ""
            line += (
                f" | {a}{v['speedup']:.1f}x faster than CoTK ({a}{v['cpu_speedup']:.1f}x in CPU time, "
                f"{a}{v['process_speedup']:.1f}x in process wall): "
                f"{yes(v['speed_ok'])} | peak memory {a}{v['mem_ratio'] * 100:.1f}% of CoTK's: {yes(v['mem_ok'])}"
            )
        print(line)
    for n in notes:
        print(f"note: {n}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "settings": SETTINGS,
                    "dev_lines": args.dev_lines,
                    "cotk": cotk_msg,
                    "results": results,
                    "verdicts": verdicts,
                    "notes": notes,
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
