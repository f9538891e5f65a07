"""Outputs kept exactly and scored under the protocol they were prompted with (issue 45, items 7 and 8).

* ``evaluate --hyps OUT`` stamps the protocol ``OUT.json`` (``generate``'s sidecar) records, says so on stderr,
  and refuses a ``--protocol`` with another hash, or one given for outputs made without a protocol.
* ``generate --out FILE.jsonl`` writes one JSON string per line, every character kept; ``evaluate --hyps
  FILE.jsonl`` reads them back; the plain-text form replaces exactly the characters docs/llm.md lists (checked
  against every code point, not against a copy of the list).

The generator is the built-in ``copy`` (its output is its prompt), so an output holds whatever a template puts in.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from cotk_repro.core.canonical import hash_object
from cotk_repro.generation import GeneratorError, json_line, one_line
from cotk_repro.llm import load_protocol
from cotk_repro.llm.generate import generate_file, protocol_of_outputs
from cotk_repro.metrics.files import evaluate_files, read_hypotheses

DOCS = Path(__file__).resolve().parent.parent / "docs" / "llm.md"
# the characters the plain-text form replaces, put into an output by the template (Jinja turns a CR or CR LF in
# a template's text into LF, so the CR comes from an input line instead: a lone CR inside a line is content)
BREAKS = "\f|\v|\x85|\u2028|\u2029|\x1c|\x1d|\x1e"
TEMPLATE = "{{ input }}\n" + BREAKS + "| tab\tend \n"


@pytest.fixture
def work(tmp_path):
    (tmp_path / "inputs.txt").write_bytes(b"the cat\rsat\na dog ran\n")
    (tmp_path / "refs.txt").write_text("the cat sat down\na dog ran off\n", encoding="utf-8")
    (tmp_path / "p.toml").write_text(f"template = {json.dumps(TEMPLATE)}\nmax_new_tokens = 4\n", encoding="utf-8")
    (tmp_path / "other.toml").write_text('template = "Q: {{ input }}"\nmax_new_tokens = 4\n', encoding="utf-8")
    return tmp_path


def test_evaluate_stamps_the_recorded_protocol_and_refuses_another(cli, work):
    sha = load_protocol(work / "p.toml").sha256
    r = cli("generate", "--generator", "copy", "--protocol", "p.toml", "--inputs", "inputs.txt", "--out", "out.txt",
            "--cache", "cache", cwd=work)  # fmt: skip
    assert r.returncode == 0, r
    base = ["evaluate", "--hyps", "out.txt", "--refs", "refs.txt", "-m", "distinct", "--json"]
    r = cli(*base, cwd=work)
    assert r.returncode == 0, r
    assert f"stamping protocol {sha[:12]} (p.toml), recorded in out.txt.json" in r.stderr, r.stderr
    stamped = json.loads(r.stdout)
    plain = evaluate_files(work / "out.txt", work / "refs.txt", ["distinct"])  # the library, no protocol
    for key in [k for k in plain if k.endswith(" hashvalue")]:
        assert stamped[key] == hash_object({"metric": plain[key], "protocol": sha})
        sig = key.replace(" hashvalue", " signature")
        assert stamped[sig] == plain[sig] + f"|protocol:{sha[:12]}"
    r = cli(*base, "--protocol", "p.toml", cwd=work)  # the same protocol named: the same result
    assert r.returncode == 0 and json.loads(r.stdout) == stamped, r
    r = cli(*base, "--protocol", "other.toml", cwd=work)
    assert r.returncode == 2 and r.stdout == "", r
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith(f"Error: --protocol other.toml (hash {load_protocol(work / 'other.toml').sha256[:12]})")
    assert f"is not the protocol p.toml (hash {sha[:12]}) that out.txt.json records for out.txt" in line


def test_a_sidecar_without_a_protocol_refuses_one_and_a_broken_sidecar_is_one_sentence(work):
    meta = generate_file("copy", {}, work / "inputs.txt", work / "plain.txt", cache_dir=work / "c")
    assert meta["protocol"] is None
    assert protocol_of_outputs(work / "plain.txt") is None
    other = load_protocol(work / "other.toml")
    with pytest.raises(GeneratorError, match=r"plain\.txt\.json says .*plain\.txt was generated without a protocol"):
        protocol_of_outputs(work / "plain.txt", other, "other.toml")
    # no sidecar: --protocol is believed, as before
    (work / "bare.txt").write_text("a\nb\n", encoding="utf-8")
    assert protocol_of_outputs(work / "bare.txt", other, "other.toml").sha256 == other.sha256
    for broken in ("{", '{"protocol": {"sha256": "x", "path": "p"}}', "[]", '{"system": {}}'):
        (work / "bare.txt.json").write_text(broken, encoding="utf-8")
        with pytest.raises(GeneratorError) as info:
            protocol_of_outputs(work / "bare.txt")
        assert "is not the sidecar `cotk-repro generate` writes" in info.value.message
        assert "\n" not in info.value.message


def test_jsonl_outputs_keep_every_character_and_evaluate_reads_them(work):
    p = load_protocol(work / "p.toml")
    generate_file("copy", {}, work / "inputs.txt", work / "out.jsonl", protocol=p, cache_dir=work / "c")
    generate_file("copy", {}, work / "inputs.txt", work / "out.txt", protocol=p, cache_dir=work / "c")
    exact = [p.render(line) for line in ("the cat\rsat", "a dog ran")]  # copy's output is its prompt
    assert all(c in exact[0] for c in ["\r", "\n", *BREAKS.split("|")]) and exact[0].endswith("end \n")
    raw = (work / "out.jsonl").read_bytes().decode("utf-8")
    assert raw.count("\n") == 2 and all(c not in raw for c in "\r\x85\u2028\u2029\f\v")  # one line each, escaped
    assert [json.loads(line) for line in raw.splitlines()] == exact
    assert read_hypotheses(work / "out.jsonl") == exact
    # the plain-text form: the documented replacements, and nothing else
    assert (work / "out.txt").read_text(encoding="utf-8").split("\n")[:-1] == [one_line(t) for t in exact]
    assert one_line(exact[0]) == "the cat sat  | | | | | | | | tab\tend "  # each break a space, the final one gone
    scored = evaluate_files(work / "out.jsonl", work / "refs.txt", ["distinct"])
    from cotk_repro.metrics import get_metric

    assert scored["distinct-1"] == get_metric("distinct", ngram=1).compute(exact)["distinct-1"]
    (work / "bad.jsonl").write_text('"a"\n{"text": "b"}\n', encoding="utf-8")
    with pytest.raises(Exception, match=r"bad\.jsonl line 2 is not a JSON string"):
        read_hypotheses(work / "bad.jsonl")


def test_an_interrupted_jsonl_generation_resumes(work, monkeypatch):
    """The exact form resumes like the text form: a cut-off last line is generated again, nothing else."""
    from cotk_repro.llm import generate_outputs

    p = load_protocol(work / "p.toml")
    inputs = [f"input {n}" for n in range(5)]
    whole = generate_outputs("copy", {}, inputs, protocol=p, cache_dir=work / "a")
    assert whole.path.suffix == ".jsonl" and whole.exact == [p.render(t) for t in inputs]
    partial = whole.path.with_suffix(".partial")
    data = whole.path.read_bytes()
    partial.write_bytes(data[: data.index(b"\n", data.index(b"\n") + 1) + 5])  # two lines and a cut-off third
    whole.path.unlink()
    resumed = generate_outputs("copy", {}, inputs, protocol=p, cache_dir=work / "a")
    assert resumed.reused == 2 and resumed.exact == whole.exact and resumed.outputs == whole.outputs


def _documented_replacements() -> set[str]:
    """The characters docs/llm.md's table says the plain-text form replaces (its "U+XXXX" column)."""
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("<!-- replaced characters -->") : text.index("<!-- /replaced characters -->")]
    return {chr(int(code, 16)) for code in re.findall(r"^\| U\+([0-9A-F]{4}) \|", section, flags=re.M)}


def test_the_documented_replacements_are_exactly_what_the_text_form_replaces():
    replaced = {chr(c) for c in range(sys.maxunicode + 1) if one_line(f"a{chr(c)}b") != f"a{chr(c)}b"}
    assert replaced == _documented_replacements()
    assert all(one_line(f"a{c}b") == "a b" for c in replaced)  # each by one space
    assert one_line("a\r\nb") == "a b" and one_line("a\n") == "a" and one_line("a\n\n") == "a "  # as documented
    assert one_line("a \t") == "a \t"  # trailing spaces and tabs stay
    for c in replaced:
        assert json.loads(json_line(f"a{c}b")) == f"a{c}b" and c not in json_line(f"a{c}b")
