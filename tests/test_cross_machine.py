"""A result reproduces on any machine: every registered metric's hash is the same under other CPU kernels, BLAS
core types, thread counts, hash seeds and Python versions; how far each value moves is measured and recorded.

"Another machine" is simulated in fresh processes of this file (``python tests/test_cross_machine.py WORKDIR``):
torch's CPU kernels (``ATEN_CPU_CAPABILITY`` default and avx2 against the machine's own), an older OpenBLAS
core type (``OPENBLAS_CORETYPE=Sandybridge``), one intra-op thread against the default, and two
``PYTHONHASHSEED`` values. Each process computes the core metrics on the pins' inputs (``test_metric_pins``),
the lm plugin's fluency, coherence, bertscore and mauve on tiny models, texygen's nll-oracle, nll-test and
embsim, the example plugin's toy-metric (imported from its folder, not installed) and the summarizers'
generators (their summaries must be equal). The tiny models and files are built once, by the parent, without
torch's CPU kernels (``lm_support.kernel_free_init``), so every process scores the same inputs.

The moves go to ``$COTK_REPRO_TEST_ARTIFACTS/cross-machine.json`` (and are printed); docs/metrics.md, "What a
hash may contain", says why a hash never covers a computed value. The core metrics also run under every
Python the project allows that the machine has (``$PYENV_ROOT/versions/3.1X*``, else ``~/.pyenv``), each in a venv cached under
the user cache dir with the core installed from a wheel of this tree (tests/venv_cache.py).

Run: ``python -m pytest -p no:cacheprovider -m cross_machine tests/test_cross_machine.py``.
"""

from __future__ import annotations

import glob
import hashlib
import json
import math
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.cross_machine]

ROOT = Path(__file__).resolve().parent.parent
PLUGINS = ROOT / "plugins"

#: name -> the environment it sets over the base one (``None``: the variable removed)
CONFIGS: dict[str, dict[str, str | None]] = {
    "own": {},
    "aten-default": {"ATEN_CPU_CAPABILITY": "default"},
    "aten-avx2": {"ATEN_CPU_CAPABILITY": "avx2"},
    "openblas-sandybridge": {"OPENBLAS_CORETYPE": "Sandybridge"},
    "threads-1": {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
    "hashseed-12345": {"PYTHONHASHSEED": "12345"},
}
BASE_ENV: dict[str, str | None] = {
    "PYTHONHASHSEED": "0",
    "ATEN_CPU_CAPABILITY": None,
    "OPENBLAS_CORETYPE": None,
    "OMP_NUM_THREADS": None,
    "OPENBLAS_NUM_THREADS": None,
    "MKL_NUM_THREADS": None,
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}
PYTHONS = ("3.10", "3.11", "3.12", "3.13")


# -- the worker: one fresh process, every metric -------------------------------------------------------------


def _entries(result: dict[str, Any], prefix: str) -> dict[str, list[Any]]:
    """``{prefix/key: [value, hash, signature]}`` of every float value of a result."""
    return {
        f"{prefix}/{k}": [v, result.get(k + " hashvalue"), result.get(k + " signature")]
        for k, v in result.items()
        if isinstance(v, float) and not k.endswith((" hashvalue", " signature"))
    }


def core_entries(*, tolerate_missing: bool = False) -> dict[str, list[Any]]:
    """The pins' cases of every core metric (a case of a metric this environment lacks is left out)."""
    sys.path.insert(0, str(ROOT / "tests"))
    import test_metric_pins as pins

    from cotk_repro.plugins import get_plugins

    registry = get_plugins().registry("metric")
    out: dict[str, list[Any]] = {}
    for case, metric, options, kind in pins.CASES:
        if metric not in registry:
            continue
        try:
            out.update(_entries(pins._run(metric, options, kind), case))
        except Exception as exc:  # an optional dependency this environment lacks: compared where all have it
            if not tolerate_missing:
                raise
            sys.stderr.write(f"{case}: {exc}\n")
    return out


def plugin_entries(work: Path) -> dict[str, list[Any]]:
    """The lm, texygen, example and summarizers plugins on the parent's files under ``work``."""
    from cotk_repro.metrics import get_metric

    sys.path.insert(0, str(PLUGINS / "cotk-repro-lm" / "tests"))
    from lm_support import corpus_lines

    out: dict[str, list[Any]] = {}
    lines = corpus_lines()
    hyps, queries, human = lines[0:40:2], lines[1:40:2], lines[40:80:2]
    refs = [[r, lines[(7 * i + 300) % len(lines)]] for i, r in enumerate(lines[41:81:2])]
    gpt2, bert = str(work / "gpt2"), str(work / "bert")
    lm = {
        "fluency-given": get_metric("fluency", model=gpt2, lower_bound=-9.5).compute(hyps),
        "fluency-self": get_metric("fluency", model=gpt2, normalize="self").compute(hyps),
        "coherence-reference": get_metric("coherence", model=gpt2, reference=human).compute(hyps, queries=queries),
        "bertscore": get_metric("bertscore", model=bert, num_layers=2).compute(hyps, refs),
        "bertscore-idf": get_metric("bertscore", model=bert, num_layers=1, idf=True).compute(hyps, refs),
        "mauve": get_metric("mauve", featurizer=gpt2, num_buckets=4, kmeans_num_redo=1, kmeans_max_iter=50).compute(
            hyps, [[h] for h in human]
        ),
    }
    from cotk_repro_texygen.metrics import EmbSim, NllOracle, NllTest

    tokens = (work / "tokens.txt").read_text(encoding="utf-8").splitlines()
    sizes = {"seed": 3, "vocab_size": 30, "seq_len": 6, "emb_dim": 8, "hidden_dim": 8}
    files = {"tables": "files", "table": str(work / "b.npy"), "reference_table": str(work / "a.npy")}
    texygen = {
        "nll-oracle": NllOracle(**sizes).compute(tokens),
        "nll-test": NllTest(model=str(work / "g.pt")).compute(tokens),
        "embsim-files": EmbSim(**files).compute([]),
        "embsim-word2vec": EmbSim(vector_size=8, epochs=3).compute(lines[:150], lines[150:300]),
    }
    sys.path.insert(0, str(PLUGINS / "cotk-repro-example"))
    from cotk_repro_example import toy_metric

    example = {"toy-metric": toy_metric().compute(hyps, refs)}
    for case, result in {**lm, **texygen, **example}.items():
        out.update(_entries(result, case))
    from cotk_repro_summarizers.generators import GENERATORS

    docs = [" </s> ".join(p.read_text(encoding="utf-8").splitlines()) for p in sorted(NEWS.glob("*.txt"))]
    for name, cls in sorted(GENERATORS.items()):
        summaries = cls(sentences=2, sentence_separator="</s>").generate(docs)
        digest = hashlib.sha256(json.dumps(summaries).encode()).hexdigest()
        out[f"generator/{name}"] = [0.0, digest, None]  # the summaries themselves must be equal: a digest, no value
    return out


NEWS = ROOT / "examples" / "summarization" / "data" / "news" / "inputs"


def build_inputs(work: Path) -> None:
    """The tiny models and texygen files, built once (kernel-free weights), for every process to load."""
    sys.path.insert(0, str(PLUGINS / "cotk-repro-lm" / "tests"))
    import numpy as np
    import torch
    from lm_support import kernel_free_init, make_bert, make_gpt2, train_bpe
    from test_lm_pins import fixed_wordpiece

    make_gpt2(work / "gpt2", seed=0, tokenizer_json=train_bpe(work / "bpe"))
    make_bert(work / "bert", seed=0, tokenizer_json=fixed_wordpiece(work / "wordpiece"))
    from cotk_repro_texygen.models.generator import GenConfig, Generator
    from cotk_repro_texygen.oracle import save_oracle

    gen = Generator(GenConfig(30, 8, 8, 6))
    kernel_free_init(gen, 3, std=0.5)
    save_oracle(gen, work / "g.pt", 3)
    rng = np.random.default_rng(0)
    (work / "tokens.txt").write_text(
        "\n".join(" ".join(str(t) for t in rng.integers(0, 30, size=6)) for _ in range(40)) + "\n", encoding="utf-8"
    )
    for name in ("a", "b"):
        np.save(work / f"{name}.npy", (rng.integers(-1000, 1000, size=(40, 8)) / 1000).astype(np.float32))
    del torch


def _env(over: dict[str, str | None], *, pythonpath: bool = True) -> dict[str, str]:
    env = dict(os.environ)
    for key, value in {**BASE_ENV, **over}.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    if not pythonpath:
        env.pop("PYTHONPATH", None)
    return env


def _run_worker(python: str, args: list[str], env: dict[str, str], cwd: Path) -> dict[str, list[Any]]:
    proc = subprocess.run(
        [python, str(Path(__file__).resolve()), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.splitlines()[-1])


def moves(runs: dict[str, dict[str, list[Any]]], base: str) -> dict[str, dict[str, Any]]:
    """Per result key: the largest absolute and relative move of the value from ``base``, and where."""
    out: dict[str, dict[str, Any]] = {}
    for key, (value, *_) in runs[base].items():
        worst = {"max_abs": 0.0, "max_rel": 0.0, "config": None}
        for name, run in runs.items():
            other = run[key][0]
            if other == value or (math.isnan(other) and math.isnan(value)):
                continue
            delta = abs(other - value)
            rel = delta / abs(value) if value else math.inf
            if delta > worst["max_abs"]:
                worst = {"max_abs": delta, "max_rel": max(rel, worst["max_rel"]), "config": name}
            worst["max_rel"] = max(rel, worst["max_rel"])
        out[key] = worst
    return out


def _exact_moved(runs: dict[str, dict[str, list[Any]]], base: str) -> list[str]:
    """The keys of metrics declared exact (``tolerance = EXACT``: the same to the last bit on every machine) whose
    value moved between runs, with how far: an exact metric may not move at all (Python 3.12's compensated
    ``sum()`` moved ngram-entropy by 1e-15 before the metrics summed in order: cotk_repro.metrics.summation)."""
    from cotk_repro.metrics.base import EXACT
    from cotk_repro.metrics.facts import tolerance_of_result_key

    return [
        f"{key}: {move}"
        for key, move in moves(runs, base).items()
        if move["config"] is not None and tolerance_of_result_key(key.split("/", 1)[1]) == EXACT
    ]


def _record(name: str, data: dict[str, Any]) -> None:
    text = json.dumps(data, indent=1, sort_keys=True)
    sys.stdout.write(text + "\n")
    folder = os.environ.get("COTK_REPRO_TEST_ARTIFACTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / name).write_text(text + "\n", encoding="utf-8")


#: signature fields that show a computed value (declaration.COMPUTED_VALUE, or a built oracle's weight digest):
#: they may differ, as the value may
COMPUTED_SHOWN = ("bound:", "oracle:")


def _masked(signature: str | None) -> str | None:
    if signature is None:
        return None
    return "|".join(f.split(":")[0] + ":*" if f.startswith(COMPUTED_SHOWN) else f for f in signature.split("|"))


def _same_signatures(runs: dict[str, dict[str, list[Any]]]) -> list[str]:
    """The keys whose signature differs between runs outside its computed fields."""
    first = next(iter(runs.values()))
    return [
        key for key in first if len({_masked(run[key][2] if len(run[key]) > 2 else None) for run in runs.values()}) != 1
    ]


def _same_hashes(runs: dict[str, dict[str, list[Any]]]) -> list[str]:
    """The keys whose hash differs between runs, with each run's hash."""
    names = list(runs)
    first = runs[names[0]]
    bad = []
    for key in first:
        hashes = {n: runs[n].get(key, [None, "missing"])[1] for n in names}
        if len(set(hashes.values())) != 1:
            bad.append(f"{key}: {hashes}")
    assert all(set(r) == set(first) for r in runs.values())
    return bad


@pytest.mark.timeout(1800)
def test_cross_machine_every_metric_hashes_alike_under_other_kernels_threads_and_hash_seeds(tmp_path, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("mauve")
    pytest.importorskip("gensim")
    pytest.importorskip("cotk_repro_texygen")
    pytest.importorskip("cotk_repro_summarizers")
    work = tmp_path / "inputs"
    work.mkdir()
    env = _env({}) | {
        "COTK_REPRO_CACHE": str(tmp_path / "cache"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PYTHONPATH": os.pathsep.join(
            [str(ROOT), *(str(p) for p in sorted(PLUGINS.glob("cotk-repro-*"))), os.environ.get("PYTHONPATH", "")]
        ),
    }
    subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--build", str(work)], check=True, env=env, timeout=600
    )
    runs, seconds = {}, {}

    def one(name: str) -> None:
        start = time.perf_counter()
        over = {**env, **_env(CONFIGS[name]), "PYTHONPATH": env["PYTHONPATH"]}
        runs[name] = _run_worker(sys.executable, ["--all", str(work)], over, tmp_path)
        seconds[name] = round(time.perf_counter() - start, 1)

    with ThreadPoolExecutor(max_workers=2) as pool:  # two fresh processes at a time
        list(pool.map(one, CONFIGS))
    with capsys.disabled():
        _record(
            "cross-machine.json", {"configs": CONFIGS, "base": "own", "seconds": seconds, "moves": moves(runs, "own")}
        )
    assert len(runs["own"]) > 100  # every metric ran
    assert not _same_hashes(runs), "\n".join(_same_hashes(runs))
    assert not _exact_moved(runs, "own"), "\n".join(_exact_moved(runs, "own"))
    assert not _same_signatures(runs), _same_signatures(runs)


def _venv(version: str) -> Path | str:
    """A venv of Python ``version`` with the core installed from a wheel of this tree with its declared
    dependencies (cached per source state and interpreter: tests/venv_cache.py), or why there is none."""
    from venv_cache import cached_venv

    # pyenv's root as pyenv finds it: $PYENV_ROOT, else ~/.pyenv (CI runs with a new empty HOME and PYENV_ROOT set:
    # ~/.pyenv alone found no Python there, and this test skipped)
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    found = sorted(glob.glob(os.path.join(root, "versions", f"{version}*", "bin", "python3")))
    if not found:
        return f"Python {version} is not installed ({root}/versions/{version}*)"
    try:
        return Path(
            cached_venv(
                f"cross-machine-py{version}", (("pytest",),), python=found[-1], self_deps=True, without_pip=True
            )
        )
    except subprocess.CalledProcessError as exc:
        return f"installing the core under Python {version} failed (offline?): {exc}"


@pytest.mark.timeout(5400)  # the first run installs the core under each Python (cached afterwards)
def test_cross_machine_core_metrics_hash_alike_under_every_python(tmp_path, capsys):
    runs: dict[str, dict[str, list[Any]]] = {}
    skipped = {}
    for version in PYTHONS:
        python = _venv(version)
        if isinstance(python, str):
            skipped[version] = python
            continue
        # outside the tree and without PYTHONPATH: the installed core, not this checkout
        runs[version] = _run_worker(str(python), ["--core"], _env({}, pythonpath=False), tmp_path)
    shared = set.intersection(*(set(r) for r in runs.values())) if runs else set()
    counts = {v: len(r) for v, r in runs.items()}
    runs = {v: {k: r[k] for k in sorted(shared)} for v, r in runs.items()}
    with capsys.disabled():
        _record(
            "cross-python.json",
            {
                "pythons": sorted(runs),
                "keys": counts,
                "skipped": skipped,
                "moves": moves(runs, sorted(runs)[0]) if runs else {},
            },
        )
    if len(runs) < 2:
        pytest.skip("fewer than two Pythons to compare: " + "; ".join(f"{v}: {why}" for v, why in skipped.items()))
    assert len(shared) >= 75, counts  # the core's metrics ran under each (81 with its declared dependencies)
    assert not _same_hashes(runs), "\n".join(_same_hashes(runs))
    base = sorted(runs)[0]
    assert not _exact_moved(runs, base), "\n".join(_exact_moved(runs, base))
    assert not _same_signatures(runs), _same_signatures(runs)


if __name__ == "__main__":
    if sys.argv[1] == "--build":
        build_inputs(Path(sys.argv[2]))
    elif sys.argv[1] == "--core":
        print(json.dumps(core_entries(tolerate_missing=True)))
    else:
        import warnings

        warnings.filterwarnings("ignore")
        print(json.dumps({**core_entries(), **plugin_entries(Path(sys.argv[2]))}))
