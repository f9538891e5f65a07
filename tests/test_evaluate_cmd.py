"""``cotk-repro evaluate`` as a real subprocess: values equal the library's (checked against NLTK in
test_metrics_bleu.py) and each listed error is one clear sentence with exit status 2."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from nltk.tokenize import WordPunctTokenizer
from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu

from cotk_repro.metrics import evaluate, get_metric
from cotk_repro.text.reference_hashes import bleu_reference_hash

bleu_tokenize = WordPunctTokenizer().tokenize  # NLTK's own: the independent side

HYPS = ["a cat sat on the mat .", "the dog barked at the mailman", "birds fly south in winter", ""]
REFS = ["a cat is sitting on the mat .", "the dog barked at the postman", "birds fly north in spring", "empty"]


def write(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path):
    return write(tmp_path / "hyps.txt", HYPS), write(tmp_path / "refs.txt", REFS)


def test_json_output_matches_nltk_and_library(cli, files):
    hyps, refs = files
    r = cli("evaluate", "--hyps", str(hyps), "--refs", str(refs), "--metric", "bleu", "--metric", "self-bleu", "--json")
    assert r.returncode == 0, r
    out = json.loads(r.stdout)
    expected = corpus_bleu(
        [[bleu_tokenize(x)] for x in REFS],
        [bleu_tokenize(x) for x in HYPS],
        smoothing_function=SmoothingFunction().method3,
    )
    assert out["bleu"] == pytest.approx(expected, abs=1e-12)
    assert out["bleu hashvalue"] == bleu_reference_hash([[x] for x in REFS])
    assert out["bleu signature"] == "bleu|n:4|smooth:m3|tok:wordpunct-u18|refs:1|v:1"
    assert out["self-bleu"] == get_metric("self-bleu").compute(HYPS)["self-bleu"]
    assert set(out) == {
        "bleu",
        "bleu hashvalue",
        "bleu signature",
        "self-bleu",
        "self-bleu hashvalue",
        "self-bleu signature",
    }


def test_table_output_and_options(cli, files):
    hyps, refs = files
    r = cli(
        "evaluate",
        "--hyps",
        str(hyps),
        "--refs",
        str(refs),
        "-m",
        "bleu",
        "--option",
        "bleu.ngram=2",
        "--option",
        "bleu.smoothing=method1",
    )
    assert r.returncode == 0, r
    res = get_metric("bleu", ngram=2, smoothing="method1").compute(HYPS, [[x] for x in REFS])
    assert f"{res['bleu']:.6g}" in r.stdout
    assert res["bleu hashvalue"][:12] in r.stdout
    assert "n:2" in r.stdout and "smooth:m1" in r.stdout


def test_multi_reference_jsonl(cli, tmp_path):
    hyps = write(tmp_path / "h.txt", HYPS[:3])
    multi = [
        ["a cat is sitting on the mat .", "a cat sat on a mat"],
        ["the dog barked at the postman"],
        ["birds fly north in spring", "birds fly south", "in winter birds fly"],
    ]
    refs = write(tmp_path / "refs.jsonl", [json.dumps({"references": rs}) for rs in multi])
    r = cli("evaluate", "--hyps", str(hyps), "--refs", str(refs), "--json")
    assert r.returncode == 0, r
    out = json.loads(r.stdout)
    expected = corpus_bleu(
        [[bleu_tokenize(x) for x in rs] for rs in multi],
        [bleu_tokenize(x) for x in HYPS[:3]],
        smoothing_function=SmoothingFunction().method3,
    )
    assert out["bleu"] == pytest.approx(expected, abs=1e-12)
    assert "refs:1-3" in out["bleu signature"]


def test_fw_bw_bleu_takes_a_reference_set_of_another_size(cli, tmp_path, files):
    hyps, _ = files
    refs = write(tmp_path / "set.txt", REFS[:2])
    r = cli("evaluate", "--hyps", str(hyps), "--refs", str(refs), "-m", "fw-bw-bleu", "--json")
    assert r.returncode == 0, r
    out = json.loads(r.stdout)
    assert out == get_metric("fw-bw-bleu").compute(HYPS, REFS[:2])


def test_large_input(cli, fixtures_dir):
    hyps = fixtures_dir / "texygen" / "instances" / "mle.txt"
    r = cli("evaluate", "--hyps", str(hyps), "-m", "self-bleu", "--json")
    assert r.returncode == 0, r
    lines = hyps.read_text(encoding="utf-8").splitlines()
    assert json.loads(r.stdout)["self-bleu"] == get_metric("self-bleu").compute(lines)["self-bleu"]
    assert "size:2000" in json.loads(r.stdout)["self-bleu signature"]


@pytest.mark.parametrize(
    "case,message",
    [
        ("mismatch", "has 4 lines but"),
        ("empty", "is empty"),
        ("missing", "does not exist"),
        ("unknown", "unknown metric 'blue'; registered metrics: .*bleu.*self-bleu"),
        ("bad-option", "must look like METRIC.KEY=VALUE"),
        ("option-other-metric", "not among the metrics"),
        ("bad-option-value", "ngram must be"),
        ("no-refs", "needs references"),
        ("bad-jsonl", "line 2 is not valid JSON"),
        ("bad-tokenizer", "unknown tokenizer 'nope'"),
        (
            "misspelt-option",
            (
                r"metric 'bleu' has no option 'ngrm' \(did you mean 'ngram'\?\); its options: ngram, weights, "
                r"smoothing, tokenizer, dataloader"
            ),
        ),
        ("unknown-option", r"metric 'distinct' has no option 'zzz'; its options: ngram, tokenizer"),
    ],
)
def test_errors(cli, tmp_path, files, case, message):
    hyps, refs = files
    args = ["--hyps", str(hyps), "--refs", str(refs)]
    if case == "mismatch":
        args = ["--hyps", str(hyps), "--refs", str(write(tmp_path / "short.txt", REFS[:3]))]
    elif case == "empty":
        (tmp_path / "empty.txt").write_text("", encoding="utf-8")
        args = ["--hyps", str(tmp_path / "empty.txt"), "--refs", str(refs)]
    elif case == "missing":
        args = ["--hyps", str(tmp_path / "nope.txt"), "--refs", str(refs)]
    elif case == "unknown":
        args += ["-m", "blue"]
    elif case == "bad-option":
        args += ["-o", "ngram=2"]
    elif case == "option-other-metric":
        args += ["-o", "self-bleu.ngram=2"]
    elif case == "bad-option-value":
        args += ["-o", "bleu.ngram=two"]
    elif case == "no-refs":
        args = ["--hyps", str(hyps)]
    elif case == "bad-jsonl":
        bad = write(
            tmp_path / "bad.jsonl",
            ['{"references": ["a"]}', '{"references": [', '{"references": ["b"]}', '{"references": ["c"]}'],
        )
        args = ["--hyps", str(hyps), "--refs", str(bad)]
    elif case == "bad-tokenizer":
        args += ["--tokenizer", "nope"]
    elif case == "misspelt-option":
        args += ["-o", "bleu.ngrm=2"]
    elif case == "unknown-option":
        args += ["-m", "distinct", "-o", "distinct.zzz=1"]
    r = cli("evaluate", *args, "--json")
    assert r.returncode == 2, r
    assert r.stdout == ""
    assert "Traceback" not in r.stderr
    import re

    assert re.search(message, r.stderr, re.M), r.stderr
    assert "unexpected keyword" not in r.stderr


def test_help_explains_options(cli):
    r = cli("evaluate", "--help")
    assert r.returncode == 0
    for opt in ("--hyps", "--refs", "--metric", "--option", "--tokenizer", "--json"):
        assert opt in r.stdout


# -- line splitting and encoding errors (issue 12, rough edges 13 and 14) ----------------------------------


@pytest.mark.parametrize("inner", ["\u2028", "\u0085", "\x0c", "\x1c", "\x1d", "\x1e", "\r", "\u2029", "\x0b"])
def test_only_newline_splits_lines(cli, tmp_path, inner):
    """A line with U+2028, NEL, FF, FS/GS/RS or a lone CR inside stays one line, for paired and set metrics."""
    hyps = ["the cat sat on the mat", f"a dog{inner}runs fast", "the end"]
    refs = ["the cat sat on a mat", "a dog runs", "the end ."]
    h = tmp_path / "h.txt"
    r = tmp_path / "r.txt"
    h.write_bytes(("\r\n".join(hyps) + "\r\n").encode("utf-8"))  # CRLF ends are line ends
    r.write_bytes(("\n".join(refs) + "\n").encode("utf-8"))
    res = cli("evaluate", "--hyps", str(h), "--refs", str(r), "-m", "bleu", "-m", "distinct", "--json")
    assert res.returncode == 0, res
    out = json.loads(res.stdout)
    # references given are references seen, by every metric, as in the API (issue 33): distinct's hash covers them
    expected = {
        **get_metric("bleu").compute(hyps, [[x] for x in refs]),
        **get_metric("distinct").compute(hyps, [[x] for x in refs]),
    }
    assert out == expected
    res = cli("evaluate", "--hyps", str(h), "-m", "self-bleu", "--json")
    assert res.returncode == 0 and "size:3" in json.loads(res.stdout)["self-bleu signature"], res


def test_trailing_blank_lines_are_content_for_every_metric(cli, tmp_path):
    """One final newline ends the last line; a further blank line is one more (empty) line, for all metrics."""
    from cotk_repro.metrics.files import split_lines

    assert split_lines("a\nb\n") == split_lines("a\nb") == ["a", "b"]
    assert split_lines("a\nb\n\n") == ["a", "b", ""] and split_lines("a\r\nb\r\n") == ["a", "b"]
    hyps = tmp_path / "h.txt"
    hyps.write_text("\n".join(HYPS) + "\n\n", encoding="utf-8")
    refs = write(tmp_path / "r.txt", REFS)
    res = cli("evaluate", "--hyps", str(hyps), "--refs", str(refs), "-m", "bleu", "--json")
    assert res.returncode == 2 and f"has {len(HYPS) + 1} lines but" in res.stderr, res
    res = cli("evaluate", "--hyps", str(hyps), "-m", "self-bleu", "--json")
    assert res.returncode == 0 and f"size:{len(HYPS) + 1}" in json.loads(res.stdout)["self-bleu signature"], res


def test_invalid_utf8_names_line_column_and_byte(cli, tmp_path):
    hyps = tmp_path / "h.txt"
    hyps.write_bytes(b"first line\nsecond line\nthe \xff third\n")
    res = cli("evaluate", "--hyps", str(hyps), "-m", "self-bleu")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "line 3, column 5, byte offset 27 (0xff)" in res.stderr, res


ZH_HYPS = ["我们今天去公园玩。", "他说你好！天气很好。", "学生们在学习中文", "老师给我一本书。"]
ZH_REFS = ["我们明天去公园玩。", "他说：你好！天气不错。", "学生在学习中文", "老师给了我一本书。"]


@pytest.mark.parametrize("tokenizer", ["zh", "char", "13a", "intl", "space", "nltk", "ja-mecab"])
def test_bleu_family_tokenizer_option_equals_the_api(cli, tmp_path, tokenizer):
    """``-o bleu.tokenizer=NAME`` (and self-bleu's, fw-bw-bleu's) through the CLI gives the Python API's values,
    hashes and signatures for the same lines."""
    hyps, refs = write(tmp_path / "h.txt", ZH_HYPS), write(tmp_path / "r.txt", ZH_REFS)
    names = ["bleu", "self-bleu", "fw-bw-bleu"]
    args = [a for n in names for a in ("-m", n, "-o", f"{n}.tokenizer={tokenizer}")]
    r = cli("evaluate", "--hyps", str(hyps), "--refs", str(refs), *args, "--json")
    assert r.returncode == 0, r
    api = evaluate(
        [(n, {"tokenizer": tokenizer}) for n in names], hypotheses=ZH_HYPS, references=[[x] for x in ZH_REFS]
    )
    assert json.loads(r.stdout) == api
    if tokenizer not in ("nltk", "space"):
        assert f"tok:{tokenizer}" in api["bleu signature"] and "sacrebleu" in api["bleu signature"]


@pytest.mark.parametrize(
    "option,message",
    [
        ("bleu.tokenizer=zz", "unknown tokenizer 'zz' for the BLEU family"),
        ("bleu.normalize=nfd", "unknown normalize 'nfd'"),
    ],
)
def test_bad_tokenizer_options_exit_2_with_one_sentence(cli, tmp_path, option, message):
    hyps, refs = write(tmp_path / "h.txt", ZH_HYPS), write(tmp_path / "r.txt", ZH_REFS)
    r = cli("evaluate", "--hyps", str(hyps), "--refs", str(refs), "-m", "bleu", "-o", option, "--json")
    assert r.returncode == 2 and message in r.stderr and "unexpected" not in r.stderr.lower()
    assert r.stdout == "" and len(r.stderr.strip().splitlines()) == 1


def test_a_tokenizer_for_a_metric_that_does_not_tokenize_exits_2(cli, tmp_path):
    hyps, refs = write(tmp_path / "h.txt", ZH_HYPS), write(tmp_path / "r.txt", ZH_REFS)
    r = cli("evaluate", "--hyps", str(hyps), "--refs", str(refs), "-m", "accuracy", "-o", "accuracy.tokenizer=zh")
    assert r.returncode == 2 and "has no option 'tokenizer'" in r.stderr


# -- one reading of every input (issue 33, docs/inputs.md) ---------------------------------------------------------

BOM_HYPS = [
    "the cat sat on the mat .",
    "a dog barked at the postman",
    "birds fly south in winter",
    "it rains",
    "the end of the story",
]
BOM_REFS = [
    "a cat sat on the mat .",
    "the dog barked at the mailman",
    "birds fly north in spring",
    "it rained",
    "the end",
]


@pytest.mark.slow  # every metric that scores plain text (~15), through the API and one CLI process: ~8 s
def test_every_metric_gives_the_api_values_and_hashes_for_a_file_with_a_bom(cli, tmp_path):
    """A file with a leading BOM through ``evaluate`` and its lines (BOM kept by a plain read) through the API:
    the same values and hashes for every metric that scores plain text; the ones that cannot (a model, queries,
    groups) refuse in both. Every metric goes through one ``evaluate`` process (its JSON is the metrics' results
    side by side), each API call alone: a process per metric cost ~30 s, mostly start-up, and a metric whose
    result leaned on another's in the same process would show here as a difference."""
    from cotk_repro.metrics import MetricError, metric_names
    from cotk_repro.metrics.facts import metric_class

    h, r = tmp_path / "h.txt", tmp_path / "r.txt"
    h.write_bytes(("\ufeff" + "\n".join(BOM_HYPS) + "\n").encode("utf-8"))
    r.write_bytes(("\ufeff" + "\n".join(BOM_REFS) + "\n").encode("utf-8"))
    hyps = h.read_text(encoding="utf-8").splitlines()
    refs = r.read_text(encoding="utf-8").splitlines()
    assert hyps[0].startswith("\ufeff")
    apis: dict[str, dict] = {}
    for name in metric_names():
        cls = metric_class(name)
        if (
            getattr(cls, "needs_queries", False)
            or name in ("perplexity", "accuracy")
            or any(k in name for k in ("coherence", "fluency", "group", "bertscore", "mauve", "nll", "embsim"))
        ):
            continue
        try:
            apis[name] = evaluate([name], hypotheses=hyps, references=[[x] for x in refs])
        except MetricError:
            continue
    checked = list(apis)
    assert {"bleu", "self-bleu", "fw-bw-bleu", "distinct", "meteor", "rouge", "nist"} <= set(checked), checked
    res = cli("evaluate", "--hyps", str(h), "--refs", str(r), *(a for n in checked for a in ("-m", n)), "--json")
    assert res.returncode == 0, (checked, res)
    out = json.loads(res.stdout)
    for name, api in apis.items():
        assert {k: out.get(k) for k in api} == api, name
    assert set(out) == {k for api in apis.values() for k in api}  # nothing but the metrics' own keys


@pytest.mark.parametrize(
    "content,message",
    [
        (b"a b\rc d\re f\r", "ends its lines with a carriage return (CR) only"),
        (b"a b\nc\x00d\n", "line 2 holds a NUL character at column 2"),
        ("a b\nc d\n".encode("utf-16"), "is UTF-16 text"),
        ("a b\nc d\n".encode("utf-16-le"), "looks like UTF-16 text"),
    ],
)
@pytest.mark.parametrize("metric", ["distinct", "bleu", "self-bleu", "meteor"])
def test_refused_inputs_are_one_sentence_for_every_metric(cli, tmp_path, content, message, metric):
    h = tmp_path / "h.txt"
    h.write_bytes(content)
    r = write(tmp_path / "r.txt", ["a b", "c d", "e f"])
    res = cli("evaluate", "--hyps", str(h), "--refs", str(r), "-m", metric, "--json")
    assert res.returncode == 2 and message in res.stderr, res
    assert res.stdout == "" and len(res.stderr.strip().splitlines()) == 1


def test_binary_files_are_not_called_utf16(cli, tmp_path):
    """Issue 40: an ELF executable (NUL bytes on both sides of every pair) is binary, not "UTF-16 text"; the
    interpreter running the tests is a real one. gzip, PNG and random bytes are not UTF-8 either: same sentence."""
    import gzip
    import os

    elf = Path(sys.executable).resolve().read_bytes()[:65536]
    assert elf.startswith(b"\x7fELF")
    png = bytes.fromhex("89504e470d0a1a0a0000000d49484452") + os.urandom(256)
    r = write(tmp_path / "r.txt", ["a b", "c d"])
    for name, content in {
        "elf": elf,
        "gzip": gzip.compress(b"a b\nc d\n" * 50),
        "png": png,
        "random": bytes(range(256)) * 4,
    }.items():
        h = tmp_path / f"{name}.bin"
        h.write_bytes(content)
        res = cli("evaluate", "--hyps", str(h), "--refs", str(r), "-m", "bleu")
        assert res.returncode == 2 and "UTF-16" not in res.stderr, (name, res)
        [line] = res.stderr.strip().splitlines()
        assert line.startswith(f"Error: hypotheses file {h} is not UTF-8 text: line "), (name, res)


def test_the_same_rules_in_the_dataloaders_and_compare(tmp_path):
    from cotk_repro.data.reading import iter_line_blocks
    from cotk_repro.errors import CotkError
    from cotk_repro.text.textfmt import iter_lines

    cases = {
        b"a b\rc d\r": "carriage return (CR) only",
        b"a\x00b\n": "NUL character at column 2",
        "ab\n".encode("utf-16"): "UTF-16",
    }
    for i, (content, message) in enumerate(cases.items()):
        path = tmp_path / f"{i}.txt"
        path.write_bytes(content)
        for read in (lambda p: list(iter_line_blocks(p)), lambda p: list(iter_lines(p))):
            with pytest.raises(CotkError, match=message.replace("(", r"\(").replace(")", r"\)")):
                read(path)
    bom = tmp_path / "bom.txt"
    bom.write_bytes(b"\xef\xbb\xbfa \xef\xbb\xbfb\nc\rd\n")  # a leading BOM dropped; inside, BOM and CR are text
    assert list(iter_lines(bom)) == ["a \ufeffb", "c\rd"]
    assert list(iter_line_blocks(bom)) == [(1, ["a \ufeffb", "c\rd"])]


def test_distinct_hash_is_the_same_through_evaluate_and_the_api(cli, files):
    hyps, refs = files
    res = cli("evaluate", "--hyps", str(hyps), "--refs", str(refs), "-m", "distinct", "--json")
    assert res.returncode == 0, res
    assert json.loads(res.stdout) == evaluate(["distinct"], hypotheses=HYPS, references=[[x] for x in REFS])
