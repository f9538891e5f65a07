"""`cotk-repro compare` config errors: each names the file and the line, and nothing is written."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from test_compare import BASIC, toy_site, write  # noqa: F401 - toy_site is a fixture

from cotk_repro.core.tomlpos import key_lines
from cotk_repro.errors import ConfigError

pytestmark = pytest.mark.usefixtures("toy_site")


def load(root: Path, toml: str, name: str = "bench.toml"):
    from cotk_repro.compare import load_config

    (root / name).write_text(textwrap.dedent(toml).lstrip("\n"), encoding="utf-8")
    return load_config(root / name)


def error_of(root: Path, toml: str) -> str:
    with pytest.raises(ConfigError) as info:
        load(root, toml)
    return info.value.message


def line_of(toml: str, needle: str) -> int:
    lines = textwrap.dedent(toml).lstrip("\n").splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


@pytest.fixture
def root(tmp_path):
    return write(tmp_path / "p", {k: v for k, v in BASIC.items() if k != "bench.toml"})


GOOD = """
    [report]
    out = "reports"

    [[dataset]]
    name = "news"
    path = "data/news"

    [[dataset]]
    name = "wiki"
    path = "data/wiki"

    [[metric]]
    name = "toy-len"
    options = { by_size = true }
    """


def test_good_config_loads(root):
    cfg = load(root, GOOD)
    assert [d.name for d in cfg.datasets] == ["news", "wiki"]
    assert [s.name for s in cfg.systems] == ["alpha", "beta"]
    assert cfg.datasets[1].gold.name == "refs.jsonl" and cfg.datasets[0].gold_lines == 3


@pytest.mark.parametrize(
    "toml, needle, words",
    [
        (GOOD.replace('path = "data/wiki"', 'pth = "data/wiki"'), "pth", ["unknown key 'pth'", "in [[dataset]] #2"]),
        (
            GOOD + "colour = 'blue'\n",
            "colour",
            ["unknown key 'colour'", "known: higher_is_better, keys, label, name, options"],
        ),
        (GOOD.replace('out = "reports"', 'out = "reports"\nfromat = 1'), "fromat", ["unknown key 'fromat'"]),
        (
            GOOD.replace("[report]", "[format]\nstrip_tag = ['<eos>']\n[report]"),
            "strip_tag",
            ["unknown key 'strip_tag'", "strip_tags"],
        ),
        (
            GOOD.replace('path = "data/news"', 'path = "data/news"\nformat = { tokenised = false }'),
            "tokenised",
            ["unknown key 'tokenised'"],
        ),
        (GOOD.replace('out = "reports"', 'jobs = "two"'), "jobs", ["'report.jobs' must be an integer"]),
        (
            GOOD.replace('path = "data/news"', 'path = "data/news"\nformat = { lowercase = "yes" }'),
            "lowercase",
            ["'dataset[0].format.lowercase' must be true or false, got 'yes'"],
        ),
        (
            GOOD.replace('path = "data/news"', 'path = "data/news"\ngold_format = 3'),
            "gold_format",
            ["'dataset[0].gold_format' must be a string or table, got 3"],
        ),
    ],
)
def test_unknown_keys_and_bad_types_name_file_and_line(root, toml, needle, words):
    msg = error_of(root, toml)
    assert msg.startswith(f"{root / 'bench.toml'}:{line_of(toml, needle)}: "), msg
    for w in words:
        assert w in msg


def test_missing_dataset_folder_names_line(root):
    toml = GOOD.replace('path = "data/wiki"', 'path = "data/wikipedia"')
    msg = error_of(root, toml)
    assert (
        msg == f"{root / 'bench.toml'}:{line_of(toml, 'data/wikipedia')}: dataset folder data/wikipedia does not exist"
    )
    (root / "data/empty").mkdir()
    toml = GOOD.replace('path = "data/wiki"', 'path = "data/empty"')
    msg = error_of(root, toml)
    assert f":{line_of(toml, 'data/empty')}: " in msg and "no gold/ folder" in msg


def test_system_without_sample_file_for_a_dataset(root):
    # discovered systems: wiki has no samples/gamma.txt while news has one
    (root / "data/news/samples/gamma.txt").write_text("x\ny\nz\n")
    msg = error_of(root, GOOD)
    assert msg.startswith(f"{root / 'bench.toml'}:{line_of(GOOD, 'data/wiki')}: ")
    assert "dataset 'wiki' has no sample file for system 'gamma'" in msg and "gamma.txt" in msg
    # an explicit [[system]]: the line of that system
    toml = GOOD + '\n[[system]]\nname = "alpha"\n\n[[system]]\nname = "delta"\n'
    msg = error_of(root, toml)
    assert msg.startswith(f"{root / 'bench.toml'}:{line_of(toml, 'delta')}: ")
    assert "system 'delta' has no sample file for dataset 'news'" in msg
    # explicit sample paths per dataset: the line of the missing one
    toml = GOOD + '\n[[system]]\nname = "x"\nsamples = { news = "data/news/samples/alpha.txt", wiki = "nope.txt" }\n'
    msg = error_of(root, toml)
    assert msg.startswith(f"{root / 'bench.toml'}:{line_of(toml, 'nope.txt')}: ") and "(expected nope.txt)" in msg


def test_gold_and_samples_line_count_mismatch(root):
    (root / "data/news/samples/beta.txt").write_text("only\ntwo lines\n")
    toml = GOOD.replace('name = "toy-len"', 'name = "toy-overlap"').replace("options = { by_size = true }", "")
    msg = error_of(root, toml)
    assert msg.startswith(f"{root / 'bench.toml'}:{line_of(toml, 'data/news')}: "), msg
    assert "system 'beta' has 2 lines of samples in data/news/samples/beta.txt" in msg
    assert "gold file data/news/gold/refs.txt of dataset 'news' has 3" in msg
    # explicit system: its line; a metric that does not read gold line by line does not mind
    toml2 = toml + '\n[[system]]\nname = "beta"\n'
    assert error_of(root, toml2).startswith(f"{root / 'bench.toml'}:{line_of(toml2, 'beta')}: ")
    assert load(root, GOOD + 'references = "none"\n').systems


@pytest.mark.parametrize(
    "extra, needle, words",
    [
        ('[[metric]]\nname = "no-such-metric"\n', "no-such-metric", ["unknown metric 'no-such-metric'", "toy-len"]),
        ('[[metric]]\nname = "toy-len"\n', 'name = "toy-len"', ["label 'toy-len' is used twice"]),
        (
            '[[metric]]\nname = "toy-overlap"\noptions = { nope = 1 }\n',
            "nope",
            ["metric 'toy-overlap' has no option 'nope'"],
        ),
        ('[[metric]]\nname = "toy-overlap"\nreferences = "sometimes"\n', "sometimes", ["must be one of"]),
        ('[[metric]]\nname = "toy-overlap"\nlabel = "a/b"\n', "a/b", ["may hold only"]),
        ('[[system]]\nname = "g"\ngenerator = "nope"\n', '"nope"', ["unknown generator 'nope'", "copy", "upper"]),
        ('[[system]]\nname = "g"\ngenerator = "ngram"\nsettings = { order = 0 }\n', "order", ["order"]),
        ('[[system]]\nname = "g"\ngenerator = "copy"\n', 'generator = "copy"', ["needs inputs"]),
        ('[[system]]\nname = "alpha"\ndatasets = ["news", "nope"]\n', "datasets", ["unknown dataset 'nope'"]),
        ('[[dataset]]\nname = "news"\npath = "data/news"\n', 'name = "news"', ["defined twice"]),
        ('[[dataset]]\nname = "x"\npath = "data/news"\nformat = "fancy"\n', "fancy", ["unknown format 'fancy'"]),
    ],
)
def test_other_config_errors_name_the_line(root, extra, needle, words):
    toml = GOOD + "\n" + extra
    msg = error_of(root, toml)
    lines = textwrap.dedent(toml).lstrip("\n").splitlines()
    line = max(i for i, text in enumerate(lines, 1) if needle in text)
    assert msg.startswith(f"{root / 'bench.toml'}:{line}: "), msg
    for w in words:
        assert w in msg, msg


def test_cli_config_error_is_one_sentence_exit_2_and_writes_nothing(root, toy_site, cli):  # noqa: F811
    toml = GOOD.replace('path = "data/wiki"', 'pth = "data/wiki"')
    (root / "bench.toml").write_text(textwrap.dedent(toml).lstrip("\n"))
    res = cli("compare", "bench.toml", cwd=root, env=toy_site)
    assert res.returncode == 2, res
    assert res.stderr.strip().startswith(f"Error: bench.toml:{line_of(toml, 'pth')}: unknown key 'pth'")
    assert "Traceback" not in res.stderr and res.stdout == ""
    assert not (root / "reports").exists()
    res = cli("compare", "missing.toml", cwd=root, env=toy_site)
    assert res.returncode == 2 and "config file missing.toml does not exist" in res.stderr


def test_invalid_toml_is_reported_with_its_position(root):
    msg = error_of(root, '[report]\nout = "x\n')
    assert "invalid TOML" in msg and "line 2" in msg


def test_key_lines_locates_tables_arrays_and_inline_keys():
    text = textwrap.dedent("""
        # comment
        [report]
        out = "r"
        [[dataset]]
        name = "a"
        format = { tokenized = true, strip_tags = ["<a>", "}"], nested = { x = 1 } }
        [[dataset]]
        list = [
          1,
          "[[not a header]]",
        ]
        "quoted key".sub = 3
        [dataset.format]
        lowercase = true
        text = '''
        [[fake]]
        '''
        [[metric]]
        options = { n = 4 }
        """).lstrip("\n")
    lines = key_lines(text)
    assert lines[("report", "out")] == 3
    assert lines[("dataset", 0)] == 4 and lines[("dataset", 1)] == 7
    assert lines[("dataset", 0, "format", "strip_tags")] == 6
    assert lines[("dataset", 0, "format", "nested", "x")] == 6
    assert lines[("dataset", 1, "quoted key", "sub")] == 12
    assert lines[("dataset", 1, "format", "lowercase")] == 14
    assert lines[("metric", 0, "options", "n")] == 19
    assert ("fake",) not in lines and ("not a header",) not in lines


def test_environment_variables_in_paths(root, monkeypatch):
    toml = GOOD.replace('path = "data/wiki"', 'path = "${COMPARE_TEST_DATA:-data}/wiki"')
    monkeypatch.delenv("COMPARE_TEST_DATA", raising=False)
    assert load(root, toml).datasets[1].gold == (root / "data/wiki/gold/refs.jsonl").resolve()  # the default
    monkeypatch.setenv("COMPARE_TEST_DATA", str(root / "data"))
    assert load(root, toml).datasets[1].gold == root / "data/wiki/gold/refs.jsonl"
    toml = GOOD.replace('path = "data/wiki"', 'path = "${COMPARE_TEST_UNSET}/wiki"')
    monkeypatch.delenv("COMPARE_TEST_UNSET", raising=False)
    msg = error_of(root, toml)
    assert msg.startswith(f"{root / 'bench.toml'}:{line_of(toml, 'COMPARE_TEST_UNSET')}: ")
    assert "environment variable COMPARE_TEST_UNSET" in msg and "is not set" in msg


def test_key_lines_reads_escaped_quoted_keys_as_tomllib_does():
    """A quoted key with escapes maps to the key tomllib gives, so a config error about it keeps its line."""
    import tomllib

    from cotk_repro.core.tomlpos import key_lines

    text = '[a]\n"k\\u00e9" = 1\n"q\\"x" = 2\n\'lit\\\\\' = 3\n'
    parsed = tomllib.loads(text)["a"]
    lines = key_lines(text)
    assert {k: lines[("a", k)] for k in parsed} == {"k\u00e9": 2, 'q"x': 3, "lit\\\\": 4}
