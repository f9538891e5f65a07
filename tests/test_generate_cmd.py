"""`cotk-repro generate` and `cotk-repro evaluate --protocol` as a user runs them (real subprocesses).

The generators are the built-in ``copy`` and the test plugin ``toy-prompts`` (tests/llm_support.py), installed as
a plugin distribution on PYTHONPATH; Ctrl-C is a KeyboardInterrupt the toy raises inside the real process.
"""

from __future__ import annotations

import hashlib
import json
import os

import pytest
from llm_support import install

from cotk_repro.core.canonical import hash_object

PROTOCOL = """
template = "Q: {{ input }}\\nA:"
system = "Be brief."
max_new_tokens = 6

[[few_shot]]
input = "hi"
output = " hello"
"""


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("generate-env")
    site = install(root / "site")
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, "COTK_REPRO_CACHE": str(root / "cache")}


@pytest.fixture
def work(tmp_path):
    (tmp_path / "inputs.txt").write_text("the cat sat\na dog ran\nbirds fly high\n", encoding="utf-8")
    (tmp_path / "p.toml").write_text(PROTOCOL, encoding="utf-8")
    return tmp_path


def test_generate_writes_one_line_per_input_and_the_sidecar(cli, work, env):
    r = cli(
        "generate", "--generator", "copy", "--inputs", "inputs.txt", "--protocol", "p.toml", "--out", "out.txt",
        "--json", cwd=work, env=env,
    )  # fmt: skip
    assert r.returncode == 0, r
    # copy returns the rendered prompt; a newline inside an output becomes a space
    assert (work / "out.txt").read_text(encoding="utf-8").splitlines() == [
        f"Be brief.  Q: hi A: hello  Q: {line} A:" for line in ("the cat sat", "a dog ran", "birds fly high")
    ]
    sidecar = json.loads((work / "out.txt.json").read_text(encoding="utf-8"))
    from cotk_repro.llm import load_protocol

    assert sidecar == {
        "system": {
            "generator": "copy",
            "version": "1",
            "settings": {"lowercase": False, "max_tokens": None},
            "pinned": True,
        },
        "protocol": {"sha256": load_protocol(work / "p.toml").sha256, "path": "p.toml"},
        "inputs_sha256": hashlib.sha256((work / "inputs.txt").read_bytes()).hexdigest(),
        "lines": 3,
    }
    assert json.loads(r.stdout) == dict(sidecar, reused=0)


def test_ctrl_c_then_the_same_command_generates_only_the_rest(cli, work, env):
    (work / "inputs.txt").write_text("".join(f"question number {n}\n" for n in range(7)), encoding="utf-8")
    args = ["generate", "--generator", "toy-prompts", "-g", "toy-prompts.batch_size=2", "--inputs", "inputs.txt"]
    args += ["--protocol", "p.toml", "--cache", "cache"]
    log = work / "log.txt"
    r = cli(*args, "--out", "out.txt", cwd=work, env=dict(env, TOY_LOG=str(log), TOY_INTERRUPT_AFTER="2"))
    assert r.returncode == 130 and "interrupted" in r.stderr and "Traceback" not in r.stderr, r
    assert not (work / "out.txt").exists() and not (work / "out.txt.json").exists()
    assert len(log.read_text().splitlines()) == 4
    r = cli(*args, "--out", "out.txt", "--json", cwd=work, env=dict(env, TOY_LOG=str(log)))
    assert r.returncode == 0, r
    assert json.loads(r.stdout)["reused"] == 4
    assert len(log.read_text().splitlines()) == 7  # only the three that were missing
    # an uninterrupted run in a fresh cache gives the same file
    r = cli(*args[:-1], "fresh", "--out", "whole.txt", cwd=work, env=env)
    assert r.returncode == 0, r
    assert (work / "out.txt").read_bytes() == (work / "whole.txt").read_bytes()


CASES = {
    "undefined field": "'topic', which is undefined",
    "bad TOML": "is not valid TOML",
    "conflicting -g": "toy-prompts.max_new_tokens = 9 conflicts with max_new_tokens = 6 in protocol p.toml",
    "missing inputs": "inputs file nope.txt does not exist",
    "missing protocol": "protocol file nope.toml does not exist",
    "chat to a text-only generator": "generator 'copy' takes plain-text prompts only",
}


@pytest.mark.parametrize("case", list(CASES))
def test_every_user_error_is_one_sentence_exit_2_and_no_file(cli, work, env, case):
    args = ["generate", "--generator", "copy", "--inputs", "inputs.txt", "--out", "out.txt"]
    if case == "undefined field":
        (work / "bad.toml").write_text('template = "{{ input }} {{ topic }}"\nmax_new_tokens = 2\n', encoding="utf-8")
        args += ["--protocol", "bad.toml"]
    elif case == "bad TOML":
        (work / "bad.toml").write_text('template = "{{ input }}\nmax_new_tokens = 2\n', encoding="utf-8")
        args += ["--protocol", "bad.toml"]
    elif case == "conflicting -g":
        args = ["generate", "--generator", "toy-prompts", "-g", "toy-prompts.max_new_tokens=9", "--protocol", "p.toml"]
        args += ["--inputs", "inputs.txt", "--out", "out.txt"]
    elif case == "missing inputs":
        args[args.index("inputs.txt")] = "nope.txt"
    elif case == "missing protocol":
        args += ["--protocol", "nope.toml"]
    elif case == "chat to a text-only generator":
        (work / "chat.toml").write_text('template = "{{ input }}"\nmax_new_tokens = 2\nchat = true\n', encoding="utf-8")
        args += ["--protocol", "chat.toml"]
    r = cli(*args, cwd=work, env=env)
    assert r.returncode == 2, r
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and CASES[case] in lines[0], r
    assert "Traceback" not in r.stderr and "Error: unexpected" not in r.stderr
    assert not (work / "out.txt").exists() and not (work / "out.txt.json").exists()


def test_evaluate_protocol_puts_the_template_into_every_hash(cli, work, env):
    from cotk_repro.llm import load_protocol
    from cotk_repro.metrics.files import evaluate_files

    (work / "hyps.txt").write_text("the cat sat\na dog\n", encoding="utf-8")
    (work / "refs.txt").write_text("the cat sat down\na dog ran\n", encoding="utf-8")
    (work / "other.toml").write_text(PROTOCOL.replace("Q: ", "Question: "), encoding="utf-8")
    base = ["evaluate", "--hyps", "hyps.txt", "--refs", "refs.txt", "-m", "bleu", "-m", "distinct", "--json"]
    results = {"": evaluate_files(work / "hyps.txt", work / "refs.txt", ["bleu", "distinct"])}  # no protocol
    for name in ("p.toml", "other.toml"):
        r = cli(*base, "--protocol", name, cwd=work, env=env)
        assert r.returncode == 0, r
        results[name] = json.loads(r.stdout)
    sha = load_protocol(work / "p.toml").sha256
    hashes = [k for k in results[""] if k.endswith(" hashvalue")]
    assert len(hashes) == 3
    for k in hashes:
        assert results["p.toml"][k] == hash_object({"metric": results[""][k], "protocol": sha})
        assert results["other.toml"][k] not in (results[""][k], results["p.toml"][k])
        sig = k.replace(" hashvalue", " signature")
        assert results["p.toml"][sig] == results[""][sig] + f"|protocol:{sha[:12]}"
    (work / "bad.toml").write_text('template = "{{ inputs }}"\nmax_new_tokens = 1\n', encoding="utf-8")
    r = cli(*base, "--protocol", "bad.toml", cwd=work, env=env)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "'inputs', which is undefined" in r.stderr, r


def test_help_explains_the_protocol_and_the_resume(cli):
    r = cli("generate", "--help", env={"COLUMNS": "200"})
    assert r.returncode == 0
    for words in ("--protocol", "-g", "FILE.json", "Ctrl-C", "--cache"):
        assert words in r.stdout, words


def test_inputs_default_to_the_protocols_and_other_inputs_are_refused(work):
    from cotk_repro.generation import GeneratorError
    from cotk_repro.llm import load_protocol
    from cotk_repro.llm.generate import generate_file

    (work / "named.toml").write_text('inputs = "inputs.txt"\n' + PROTOCOL, encoding="utf-8")
    named = load_protocol(work / "named.toml")
    (work / "other.txt").write_text("x\n", encoding="utf-8")
    with pytest.raises(GeneratorError, match="is not the inputs file"):
        generate_file("copy", {}, work / "other.txt", work / "out.txt", protocol=named, cache_dir=work / "c")
    assert not (work / "out.txt").exists()
    meta = generate_file("copy", {}, None, work / "out.txt", protocol=named, cache_dir=work / "c")
    assert meta["lines"] == 3 and len((work / "out.txt").read_text().splitlines()) == 3


def test_settings_errors_are_one_sentence():
    from cotk_repro.generation import GeneratorError, make_generator
    from cotk_repro.metrics.base import MetricError
    from cotk_repro.metrics.files import parse_options

    with pytest.raises(MetricError, match=r"must look like GENERATOR\.KEY=VALUE, e\.g\. hf\.batch_size=8"):
        parse_options(["max_tokens=3"], ["copy"], what="generator", example="hf.batch_size=8")
    with pytest.raises(MetricError, match="is for generator 'hf', which is not among the generators asked for"):
        parse_options(["hf.seed=1"], ["copy"], what="generator")
    with pytest.raises(GeneratorError, match=r"generator 'copy' rejected its settings: .*temprature"):
        make_generator("copy", {"temprature": 0.5})
    with pytest.raises(GeneratorError, match="generator 'copy' could not be created: ValueError: setting 'max_tokens'"):
        make_generator("copy", {"max_tokens": 0})
