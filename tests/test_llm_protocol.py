"""The prompt protocol (cotk_repro.llm): loading a stranger's file, rendering, the hash over its content, the hash
joined to every metric's (evaluate and compare), and generation that is resumable and independent of the batch size.

Expected prompts are written out by hand from the contract (docs/llm-protocol.md); the stamped hashes are recomputed from
their definition. The generators are the built-in ``copy`` and a test plugin (tests/llm_support.py) that takes
chat prompts; no model runs here.
"""

from __future__ import annotations

import hashlib
import json
import random
import textwrap
from pathlib import Path

import pytest
from llm_support import activate, deactivate, install

from cotk_repro.core.canonical import hash_object
from cotk_repro.llm import Protocol, ProtocolError, generate_outputs, load_protocol, stamp_protocol

BASE = """
# how the toy task is asked
template = "Q: {{ input }}\\nA: "
system = "Answer in one word."
max_new_tokens = 4
stop = ["."]

[[few_shot]]
input = "one plus one"
output = "two"

[[few_shot]]
input = "two plus two"
output = "four"
"""


def top(extra: str) -> str:
    """BASE with ``extra`` among its top-level fields (before the [[few_shot]] tables)."""
    return BASE.replace("# how the toy task is asked", extra)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def toy_generators(tmp_path_factory):
    site = install(tmp_path_factory.mktemp("llm-toy-site"))
    activate(site)
    yield site
    deactivate(site)


def test_plain_text_rendering_is_system_then_examples_then_the_input(tmp_path):
    p = load_protocol(write(tmp_path / "p.toml", BASE))
    assert p.render("three plus three") == (
        "Answer in one word.\n\nQ: one plus one\nA: two\n\nQ: two plus two\nA: four\n\nQ: three plus three\nA: "
    )
    assert p.decoding() == {"chat": False, "max_new_tokens": 4, "stop": ["."]}


def test_chat_rendering_is_messages_with_each_example_a_user_and_an_assistant_turn(tmp_path):
    p = load_protocol(write(tmp_path / "p.toml", top("chat = true")))
    assert p.render("x") == [
        {"role": "system", "content": "Answer in one word."},
        {"role": "user", "content": "Q: one plus one\nA: "},
        {"role": "assistant", "content": "two"},
        {"role": "user", "content": "Q: two plus two\nA: "},
        {"role": "assistant", "content": "four"},
        {"role": "user", "content": "Q: x\nA: "},
    ]


def test_shuffled_examples_follow_random_random_seed_shuffle(tmp_path):
    shots = "".join(f'\n[[few_shot]]\ninput = "i{n}"\noutput = "o{n}"\n' for n in range(6))
    head = 'template = "{{ input }}="\nmax_new_tokens = 1\n'
    written = load_protocol(write(tmp_path / "a.toml", head + shots))
    shuffled = load_protocol(
        write(tmp_path / "b.toml", head + 'few_shot_order = "shuffled"\nfew_shot_seed = 7\n' + shots)
    )
    order = list(range(6))
    random.Random(7).shuffle(order)
    assert [ex.input for ex in written.few_shot] == [f"i{n}" for n in range(6)]
    assert [ex.input for ex in shuffled.few_shot] == [f"i{n}" for n in order]
    assert shuffled.render("q") == "".join(f"i{n}=o{n}\n\n" for n in order) + "q="
    assert shuffled.sha256 != written.sha256


def test_the_hash_is_of_the_content_not_the_path_layout_or_comments(tmp_path):
    a = load_protocol(write(tmp_path / "a.toml", BASE))
    # the same fields: another folder and name, keys reordered, other quoting, comments and blank lines
    b = load_protocol(
        write(
            tmp_path / "elsewhere" / "other-name.toml",
            """
            stop = [ "." ]     # cut at the full stop
            max_new_tokens = 4
            system = 'Answer in one word.'
            template = '''Q: {{ input }}
            A: '''
            few_shot = [ { input = "one plus one", output = "two" },
                         { output = "four", input = "two plus two" } ]
            """,
        )
    )
    assert a.sha256 == b.sha256
    expected = hash_object(
        {
            "format": "cotk-repro/protocol",
            "format_version": 1,
            "template": "Q: {{ input }}\nA: ",
            "system": "Answer in one word.",
            "chat": False,
            "max_new_tokens": 4,
            "stop": ["."],
            "few_shot": [{"input": "one plus one", "output": "two"}, {"input": "two plus two", "output": "four"}],
            "few_shot_order": "as-written",
            "few_shot_seed": 0,
            "inputs_sha256": None,
        }
    )
    assert a.sha256 == expected


@pytest.mark.parametrize(
    "change",
    [
        ("Q: {{ input }}\\nA: ", "Question: {{ input }}\\nA: "),
        ("Answer in one word.", "Answer briefly."),
        ("max_new_tokens = 4", "max_new_tokens = 5"),
        ('stop = ["."]', 'stop = [".", "\\n"]'),
        ('output = "four"', 'output = "4"'),
        ("# how the toy task is asked", "chat = true"),
    ],
)
def test_every_field_changes_the_hash(tmp_path, change):
    a = load_protocol(write(tmp_path / "a.toml", BASE))
    assert change[0] in BASE
    b = load_protocol(write(tmp_path / "b.toml", BASE.replace(change[0], change[1])))
    assert a.sha256 != b.sha256


def test_the_inputs_file_is_hashed_by_its_content(tmp_path):
    write(tmp_path / "in.txt", "a\nb\n")
    p1 = load_protocol(write(tmp_path / "p.toml", top('inputs = "in.txt"')))
    assert p1.inputs_sha256 == hashlib.sha256(b"a\nb\n").hexdigest()
    write(tmp_path / "in.txt", "a\nc\n")
    p2 = load_protocol(tmp_path / "p.toml")
    assert p1.sha256 != p2.sha256


BAD = {
    "undefined field": (
        'template = "{{ input }} {{ context }}"\nmax_new_tokens = 2\n',
        "'context', which is undefined",
    ),
    "undefined in a filter": ('template = "{{ input | default(secret) }}"\nmax_new_tokens = 2\n', "'secret'"),
    "undefined on a branch": (
        "template = \"{% if input == 'x' %}{{ secret }}{% endif %}{{ input }}\"\nmax_new_tokens = 2\n",
        "'secret', which is undefined",
    ),
    "bad TOML": ('template = "{{ input }}\nmax_new_tokens = 2\n', "not valid TOML"),
    "bad Jinja": ('template = "{% if input %}{{ input }}"\nmax_new_tokens = 2\n', "not a valid Jinja template"),
    "sandbox": (
        'template = "{{ input.__class__.__mro__[1].__subclasses__() }}"\nmax_new_tokens = 2\n',
        "unsafe",
    ),
    "memory bomb": ("template = '{{ input * 100000000 }}'\nmax_new_tokens = 2\n", "holds the number 100000000"),
    "memory bomb by a product": (
        "template = '{{ input * (1000 * 1000 * 1000) }}'\nmax_new_tokens = 2\n",
        "not allowed in a protocol template",
    ),
    "power": ("template = '{{ 9 ** 9 ** 9 }}{{ input }}'\nmax_new_tokens = 2\n", "'**' with such operands"),
    "include": ("template = \"{% include '/etc/passwd' %}\"\nmax_new_tokens = 2\n", "fails to render"),
    "unknown field": ('template = "{{ input }}"\nmax_new_tokens = 2\ntemprature = 0\n', "unknown field 'temprature'"),
    "wrong type": ('template = "{{ input }}"\nmax_new_tokens = "2"\n', "'max_new_tokens' must be an integer"),
    "a flag for a number": ('template = "{{ input }}"\nmax_new_tokens = true\n', "must be an integer"),
    "zero tokens": ('template = "{{ input }}"\nmax_new_tokens = 0\n', "at least 1"),
    "no template": ("max_new_tokens = 2\n", "no 'template'"),
    "stop not a list": ('template = "{{ input }}"\nmax_new_tokens = 2\nstop = "."\n', "a list of strings"),
    "few-shot key": (
        'template = "{{ input }}"\nmax_new_tokens = 2\n[[few_shot]]\ninput = "a"\nanswer = "b"\n',
        "few-shot example 1",
    ),
    "order": ('template = "{{ input }}"\nmax_new_tokens = 2\nfew_shot_order = "random"\n', "'few_shot_order'"),
    "missing inputs": ('template = "{{ input }}"\nmax_new_tokens = 2\ninputs = "gone.txt"\n', "gone.txt"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_protocol_is_one_sentence_naming_the_file(tmp_path, name):
    text, words = BAD[name]
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ProtocolError) as info:
        load_protocol(path)
    message = info.value.message
    assert words in message and str(path) in message, message
    assert "\n" not in message and info.value.exit_code == 2


def test_a_template_that_runs_too_long_is_stopped(tmp_path, monkeypatch):
    from cotk_repro.llm import protocol

    monkeypatch.setattr(protocol, "RENDER_SECONDS", 0.3)
    loops = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}{{ input }}"
    with pytest.raises(ProtocolError, match=r"rendering took more than 0\.3 s"):
        load_protocol(write(tmp_path / "slow.toml", f"template = '{loops}'\nmax_new_tokens = 1\n"))
    fine = load_protocol(
        write(tmp_path / "fine.toml", "template = '{{ input * 2 }}-{{ 2 ** 3 }}'\nmax_new_tokens = 1\n")
    )
    assert fine.render("ab") == "abab-8"


def test_a_missing_or_non_utf8_file_is_refused(tmp_path):
    with pytest.raises(ProtocolError, match="does not exist"):
        load_protocol(tmp_path / "nope.toml")
    (tmp_path / "latin.toml").write_bytes(b'template = "caf\xe9 {{ input }}"\nmax_new_tokens = 1\n')
    with pytest.raises(ProtocolError, match="not UTF-8"):
        load_protocol(tmp_path / "latin.toml")


def test_stamp_protocol_folds_the_protocol_into_every_hash_and_signature(tmp_path):
    p = load_protocol(write(tmp_path / "p.toml", BASE))
    result = {"bleu": 0.5, "bleu hashvalue": "a" * 64, "bleu signature": "bleu|n:4", "n": 3, "n hashvalue": "b" * 64}
    stamped = stamp_protocol(result, p)
    assert stamped["bleu"] == 0.5 and stamped["n"] == 3
    assert stamped["bleu hashvalue"] == hash_object({"metric": "a" * 64, "protocol": p.sha256})
    assert stamped["n hashvalue"] == hash_object({"metric": "b" * 64, "protocol": p.sha256})
    assert stamped["bleu signature"] == f"bleu|n:4|protocol:{p.sha256[:12]}"
    assert result["bleu hashvalue"] == "a" * 64  # the metric's own dict is left alone


def test_evaluate_files_with_a_protocol_changes_every_hash_with_the_template(tmp_path):
    from cotk_repro.metrics.files import evaluate_files

    hyps = write(tmp_path / "hyps.txt", "the cat sat\na dog ran\n")
    refs = write(tmp_path / "refs.txt", "the cat sat down\na dog ran far\n")
    p1 = load_protocol(write(tmp_path / "p1.toml", BASE))
    p2 = load_protocol(write(tmp_path / "p2.toml", BASE.replace("Q: ", "Question: ")))
    same = load_protocol(write(tmp_path / "copy" / "p1.toml", "\n\n" + BASE + "\n# the same protocol\n"))
    metrics = ["bleu", "distinct", "rouge"]
    plain = evaluate_files(hyps, refs, metrics)
    r1 = evaluate_files(hyps, refs, metrics, protocol=p1)
    r2 = evaluate_files(hyps, refs, metrics, protocol=p2)
    r_same = evaluate_files(hyps, refs, metrics, protocol=same)
    hashes = [k for k in plain if k.endswith(" hashvalue")]
    assert len(hashes) >= 4
    for k in hashes:
        assert len({plain[k], r1[k], r2[k]}) == 3, k
        assert r1[k] == r_same[k] == hash_object({"metric": plain[k], "protocol": p1.sha256})
        value = k[: -len(" hashvalue")]
        assert r1[value] == r2[value] == plain[value]  # the protocol never moves a value


def test_batch_size_changes_neither_outputs_nor_hashes(tmp_path, toy_generators):
    from cotk_repro.metrics.files import evaluate_files

    p = load_protocol(write(tmp_path / "p.toml", BASE.replace("max_new_tokens = 4", "max_new_tokens = 9")))
    inputs = [f"what is {n} plus {n}" for n in range(7)]
    runs = {
        size: generate_outputs(
            "toy-prompts", {"batch_size": size}, inputs, protocol=p, cache_dir=tmp_path / f"cache{size}"
        )
        for size in (1, 3, 8)
    }
    assert runs[1].outputs == runs[3].outputs == runs[8].outputs
    assert runs[1].outputs[0] == "A: 0 plus 0 is what Q: four A:"  # the prompt's last 9 words, reversed
    refs = write(tmp_path / "refs.txt", "".join(f"{n + n}\n" for n in range(7)))
    results = []
    for size, run in runs.items():
        hyps = write(tmp_path / f"hyps{size}.txt", "".join(o + "\n" for o in run.outputs))
        results.append(evaluate_files(hyps, refs, ["bleu", "distinct"], protocol=p))
    assert results[0] == results[1] == results[2]


def test_generation_resumes_after_an_interruption_with_only_the_rest(tmp_path, toy_generators, monkeypatch):
    p = load_protocol(write(tmp_path / "p.toml", BASE))
    inputs = [f"question {n}" for n in range(7)]
    log = tmp_path / "log.txt"
    monkeypatch.setenv("TOY_LOG", str(log))
    monkeypatch.setenv("TOY_INTERRUPT_AFTER", "2")
    settings = {"batch_size": 2}
    with pytest.raises(KeyboardInterrupt):
        generate_outputs("toy-prompts", settings, inputs, protocol=p, cache_dir=tmp_path / "cache")
    assert len(log.read_text().splitlines()) == 4  # two batches of two done before Ctrl-C
    assert not list((tmp_path / "cache").rglob("*.txt"))  # no output file yet: only the partial one
    monkeypatch.delenv("TOY_INTERRUPT_AFTER")
    seen: list[tuple[int, int]] = []
    resumed = generate_outputs(
        "toy-prompts", settings, inputs, protocol=p, cache_dir=tmp_path / "cache", on_progress=lambda *a: seen.append(a)
    )
    generated = log.read_text().splitlines()
    assert len(generated) == 7 and generated[4:] == [repr(p.render(x)) for x in inputs[4:]]
    assert resumed.reused == 4 and seen[0] == (4, 7) and seen[-1] == (7, 7)
    whole = generate_outputs("toy-prompts", settings, inputs, protocol=p, cache_dir=tmp_path / "fresh")
    assert resumed.outputs == whole.outputs and whole.reused == 0
    log.unlink()
    again = generate_outputs("toy-prompts", settings, inputs, protocol=p, cache_dir=tmp_path / "cache")
    assert again.reused == 7 and again.outputs == whole.outputs and not log.exists()


def test_a_cut_off_last_line_of_the_partial_file_is_generated_again(tmp_path, toy_generators, monkeypatch):
    p = load_protocol(write(tmp_path / "p.toml", BASE))
    inputs = ["a b", "c d", "e f"]
    monkeypatch.setenv("TOY_INTERRUPT_AFTER", "1")
    with pytest.raises(KeyboardInterrupt):
        generate_outputs("toy-prompts", {"batch_size": 2}, inputs, protocol=p, cache_dir=tmp_path / "cache")
    monkeypatch.delenv("TOY_INTERRUPT_AFTER")
    (partial,) = (tmp_path / "cache").rglob("*.partial")
    partial.write_bytes(partial.read_bytes()[:-3])  # a crash in the middle of writing the second line
    resumed = generate_outputs("toy-prompts", {"batch_size": 2}, inputs, protocol=p, cache_dir=tmp_path / "cache")
    whole = generate_outputs("toy-prompts", {"batch_size": 2}, inputs, protocol=p, cache_dir=tmp_path / "fresh")
    assert resumed.reused == 1 and resumed.outputs == whole.outputs


def test_protocol_decoding_values_become_settings_and_a_conflict_is_refused(tmp_path, toy_generators):
    from cotk_repro.generation import GeneratorError

    p = load_protocol(write(tmp_path / "p.toml", top("chat = true")))
    got = generate_outputs("toy-prompts", {}, ["x y"], protocol=p, cache_dir=tmp_path / "c")
    assert got.system["settings"]["max_new_tokens"] == 4 and got.system["settings"]["chat"] is True
    assert got.system["pinned"] is True
    assert got.outputs == ["A: y x user:Q:"]  # chat messages ("role:content") reached it; 4 words
    got = generate_outputs("toy-prompts", {"max_new_tokens": 4}, ["x y"], protocol=p, cache_dir=tmp_path / "c")
    assert got.reused == 1  # the same value as the protocol's is no conflict
    with pytest.raises(GeneratorError, match=r"toy-prompts\.max_new_tokens = 8 conflicts with max_new_tokens = 4"):
        generate_outputs("toy-prompts", {"max_new_tokens": 8}, ["x"], protocol=p, cache_dir=tmp_path / "c")
    with pytest.raises(GeneratorError, match="plain-text prompts only"):
        generate_outputs("copy", {}, ["x"], protocol=p, cache_dir=tmp_path / "c")


def test_a_template_that_fails_on_one_input_names_the_line(tmp_path):
    p = load_protocol(write(tmp_path / "p.toml", 'template = "{{ input[5] }}"\nmax_new_tokens = 1\n'))
    with pytest.raises(ProtocolError, match="input line 2"):
        generate_outputs("copy", {}, ["long enough", "tiny"], protocol=p, cache_dir=tmp_path / "c")
    assert not list((tmp_path / "c").rglob("*.txt"))


COMPARE = """
[report]
out = "reports"
charts = false
html = false

[[dataset]]
name = "toy"
gold = "gold.txt"
inputs = "inputs.txt"

[[system]]
name = "plain"
generator = "copy"

[[system]]
name = "asked"
generator = "copy"
protocol = "p1.toml"

[[system]]
name = "asked-again"
generator = "copy"
protocol = "again/p1.toml"

[[system]]
name = "asked-otherwise"
generator = "copy"
protocol = "p2.toml"

[[system]]
name = "served"
generator = "toy-prompts"
settings = { pinned = false }
protocol = "p1.toml"

[[metric]]
name = "bleu"

[[metric]]
name = "distinct"
"""


def test_compare_stamps_every_cell_of_a_system_with_its_protocol(tmp_path, toy_generators):
    from cotk_repro.compare import evaluate_config, load_config

    write(tmp_path / "gold.txt", "the cat\na dog\n")
    write(tmp_path / "inputs.txt", "the cat sat\na dog ran\n")
    p1 = load_protocol(write(tmp_path / "p1.toml", 'template = "Say {{ input }}"\nmax_new_tokens = 3\n'))
    write(tmp_path / "again" / "p1.toml", "max_new_tokens = 3   # same\ntemplate = 'Say {{ input }}'\n")
    p2 = load_protocol(write(tmp_path / "p2.toml", 'template = "Tell {{ input }}"\nmax_new_tokens = 3\n'))
    cfg = load_config(write(tmp_path / "bench.toml", COMPARE))
    result = evaluate_config(cfg, jobs=1)
    assert not result.failures, result.failures
    by = {(c.system, c.column): c for c in result.cells}
    columns = {c.column for c in result.cells}
    assert len(columns) >= 3
    for col in columns:
        plain = by[("plain", col)].hash
        assert by[("asked", col)].hash == hash_object({"metric": plain, "protocol": p1.sha256})
        assert by[("asked-again", col)].hash == by[("asked", col)].hash  # same content, other path
        assert by[("asked-otherwise", col)].hash == hash_object({"metric": plain, "protocol": p2.sha256})
        assert by[("asked", col)].signature.endswith(f"|protocol:{p1.sha256[:12]}")
    # the prompts were rendered: copy returns them
    outputs = sorted(cfg.cache.rglob("*.txt"))
    texts = {f.read_text(encoding="utf-8") for f in outputs}
    assert "Say the cat sat\nSay a dog ran\n" in texts and "Tell the cat sat\nTell a dog ran\n" in texts
    metas = [json.loads(f.read_text()) for f in cfg.cache.rglob("*.json")]
    assert sorted(m["pinned"] for m in metas) == [False, True, True, True]
    assert {m.get("protocol_sha256") for m in metas} == {None, p1.sha256, p2.sha256}
    # the worker task says whether the system is pinned (a served model is not)
    from cotk_repro.compare.engine import run_generate_task

    served = next(s for s in cfg.systems if s.name == "served")
    task = {"generator": "toy-prompts", "settings": served.settings, "inputs": str(tmp_path / "inputs.txt")}
    task.update(cache=str(cfg.cache), input_format=cfg.datasets[0].sample_format.as_dict())
    task.update(protocol=str(served.protocol), protocol_sha256=served.protocol_sha256)
    out = run_generate_task(task)
    assert out["pinned"] is False and out["reused"] is True


def test_compare_refuses_a_bad_protocol_with_the_config_line(tmp_path):
    from cotk_repro.compare import load_config
    from cotk_repro.errors import ConfigError

    write(tmp_path / "gold.txt", "the cat\n")
    write(tmp_path / "inputs.txt", "the cat sat\n")
    write(tmp_path / "p1.toml", 'template = "{{ nope }}"\nmax_new_tokens = 3\n')
    text = COMPARE.split("[[system]]")[0] + '[[system]]\nname = "s"\ngenerator = "copy"\nprotocol = "p1.toml"\n'
    text += '\n[[metric]]\nname = "bleu"\n'
    with pytest.raises(
        ConfigError, match=r"bench\.toml:\d+: protocol .*p1\.toml:1: 'template' uses 'nope', which is undefined"
    ):
        load_config(write(tmp_path / "bench.toml", text))


def test_protocol_is_a_frozen_value(tmp_path):
    p = load_protocol(write(tmp_path / "p.toml", BASE))
    assert isinstance(p, Protocol)
    with pytest.raises(AttributeError):
        p.template = "{{ input }}"  # type: ignore[misc]


def test_compare_refuses_a_protocol_naming_other_inputs(tmp_path):
    from cotk_repro.compare import load_config
    from cotk_repro.errors import ConfigError

    write(tmp_path / "gold.txt", "the cat\n")
    write(tmp_path / "inputs.txt", "the cat sat\n")
    write(tmp_path / "dev.txt", "another input\n")
    write(tmp_path / "p1.toml", 'template = "{{ input }}"\nmax_new_tokens = 3\ninputs = "dev.txt"\n')
    text = COMPARE.split("[[system]]")[0] + '[[system]]\nname = "s"\ngenerator = "copy"\nprotocol = "p1.toml"\n'
    text += '\n[[metric]]\nname = "bleu"\n'
    with pytest.raises(ConfigError, match=r"names the inputs file dev\.txt, but dataset 'toy' has other inputs"):
        load_config(write(tmp_path / "bench.toml", text))
