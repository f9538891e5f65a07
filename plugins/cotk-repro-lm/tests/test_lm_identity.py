"""Issue 45, items 6 and 10: what changes the outputs keys the cache and the record, and nothing else does.

- The batch size is part of an ``hf`` system wherever greedy outputs are not proven independent of it (every
  configuration but float32 on a CPU): a bfloat16 run at batch 8 never reuses the batch-1 cache, and its sidecar
  says which batch size made it. Through ``generate_file``, what ``cotk-repro generate`` runs (its cache and sidecar
  are real files).
- The identity is the weights, not the writer's library version: rewriting ``transformers_version`` (and the
  other bookkeeping fields) in config.json and generation_config.json keeps the system's signature and the judge's
  hash; a field that changes the computation changes both.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from lm_support import _isolated_dirs, bpe_json, tiny_gpt2  # noqa: F401  (fixtures)

pytest.importorskip("torch", reason="torch is not installed (pip install torch==2.13.0)")

from cotk_repro.core.results import HASH_SUFFIX
from cotk_repro.llm.generate import generate_file
from cotk_repro.llm.system import describe_system, system_tag
from cotk_repro.metrics import get_metric
from cotk_repro_lm.generation.hf import HFGenerator

PROMPTS = ["how old is the cat ?", "what is on the table ?", "where is the dog ?", "who rides the bike ?", "so"]


def test_a_half_precision_systems_batch_size_keys_its_cache_and_sidecar(tiny_gpt2, tmp_path):
    inputs, cache = tmp_path / "inputs.txt", tmp_path / "cache"
    inputs.write_text("\n".join(PROMPTS) + "\n", encoding="utf-8")

    def run(dtype: str, batch_size: int) -> tuple[dict, dict]:
        out = tmp_path / f"{dtype}-{batch_size}.txt"
        settings = {"model": str(tiny_gpt2), "dtype": dtype, "batch_size": batch_size, "max_new_tokens": 4}
        meta = generate_file("hf", settings, inputs, out, cache_dir=cache)
        return meta, json.loads(out.with_name(out.name + ".json").read_text(encoding="utf-8"))

    meta1, side1 = run("bfloat16", 1)
    meta8, side8 = run("bfloat16", 8)
    assert meta1["reused"] == 0 and meta8["reused"] == 0  # batch 8 generated anew, never the batch-1 outputs
    assert side1["system"]["settings"]["batch_size"] == 1 and side8["system"]["settings"]["batch_size"] == 8
    assert system_tag(side1["system"]) != system_tag(side8["system"])
    # float32 on a CPU: tested invariant (test_lm_generation), so the batch size is no part of the system
    f1, fside1 = run("float32", 1)
    f8, fside8 = run("float32", 8)
    assert f1["reused"] == 0 and f8["reused"] == len(PROMPTS)
    assert "batch_size" not in fside1["system"]["settings"] and fside1["system"] == fside8["system"]
    assert (tmp_path / "float32-1.txt").read_text() == (tmp_path / "float32-8.txt").read_text()
    assert HFGenerator(str(tiny_gpt2), dtype="float16", batch_size=2).settings["batch_size"] == 2


def _rewrite(path: Path, **fields) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(fields)
    path.write_text(json.dumps(data, indent=4) + "\n", encoding="utf-8")


def test_the_identity_is_the_weights_not_the_writers_library_version(tiny_gpt2, tmp_path):
    def copy(name: str) -> Path:
        folder = tmp_path / name / tiny_gpt2.name  # the same basename: the folder's name is in the settings
        shutil.copytree(tiny_gpt2, folder)
        return folder

    def identity(folder: Path) -> tuple[str, str]:
        gen = HFGenerator(str(folder), max_new_tokens=1)
        judge = get_metric(
            "llm-judge", judge=gen, template="{{ input }} ({{ scale_min }}-{{ scale_max }}) {{ output }}"
        )
        res = judge.compute(["the cat is 4", "two and 2"], queries=PROMPTS[:2])
        return system_tag(describe_system(gen, "hf")), res["llm-judge" + HASH_SUFFIX]

    original = identity(tiny_gpt2)
    # another writer: another library version, another folder it was loaded from, the dtype under its old name
    other_writer = copy("other-writer")
    _rewrite(other_writer / "config.json", transformers_version="4.40.0", _name_or_path="/home/x/gpt2")
    config = json.loads((other_writer / "config.json").read_text(encoding="utf-8"))
    config["torch_dtype"] = config.pop("dtype", "float32")
    (other_writer / "config.json").write_text(json.dumps(config), encoding="utf-8")
    _rewrite(other_writer / "generation_config.json", transformers_version="4.40.0", temperature=0.7)
    assert identity(other_writer) == original

    # what changes the computation changes the identity
    epsilon = copy("epsilon")
    _rewrite(epsilon / "config.json", layer_norm_epsilon=1e-3)
    ngram = copy("ngram")
    _rewrite(ngram / "generation_config.json", no_repeat_ngram_size=2)
    for changed in (epsilon, ngram):
        tag, judge_hash = identity(changed)
        assert tag != original[0] and judge_hash != original[1], changed
