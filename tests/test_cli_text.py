"""The command line's text when it is not on a terminal: no wrapping that breaks URLs, ids or numbers
(issue 12, rough edge 8), and wording (rough edge 9)."""

from __future__ import annotations

import json

from conftest import write_files

LONG_HASH = "0123456789abcdef" * 4


def test_piped_tables_do_not_wrap_ids_urls_or_numbers(tmp_path, cli):
    a = tmp_path / "a.json"
    b = tmp_path / "b.json"
    metric = "a-metric-with-a-rather-long-name-https://example.org/some/very/long/path/that/should/stay/whole"
    a.write_text(json.dumps({metric: 0.123456789, f"{metric} hashvalue": LONG_HASH}))
    b.write_text(json.dumps({metric: 0.123456789, f"{metric} hashvalue": LONG_HASH}))
    res = cli("diff", str(a), str(b), env={"COLUMNS": ""})
    assert res.returncode == 0, res
    assert metric in res.stdout  # one piece, on one line
    assert max(len(line) for line in res.stdout.splitlines()) > 80
    # $COLUMNS is honoured when the user sets it
    narrow = cli("diff", str(a), str(b), env={"COLUMNS": "60"})
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 60


def test_piped_help_keeps_option_names_whole(cli):
    res = cli("data", "hashes", "--help", env={"COLUMNS": ""})
    assert res.returncode == 0
    assert "--min-frequent-vocab-times" in res.stdout and "--min-frequent-vocab-t…" not in res.stdout
    assert "--min-rare-vocab-times" in res.stdout


def test_diff_of_two_local_records_labels_them_a_and_b(make_project, cli):
    root = make_project({"main.py": 'import json\njson.dump({"x": 1.0}, open("result.json", "w"))\n'})
    first = json.loads(cli("run", "--json", "-q", cwd=root).stdout)["id"]
    second = json.loads(cli("run", "--json", "-q", cwd=root).stdout)["id"]
    res = cli("diff", first, second, cwd=root)
    assert res.returncode == 0, res
    assert "published" not in res.stdout and "rerun" not in res.stdout
    header = next(line for line in res.stdout.splitlines() if "metric" in line and "verdict" in line)
    assert " A " in header and " B " in header
    assert f"A = {first.removeprefix('sha256:')[:12]}" in res.stdout
    assert f"B = {second.removeprefix('sha256:')[:12]}" in res.stdout


def test_compare_counts_are_plural_only_when_plural(tmp_path, cli):
    write_files(
        tmp_path,
        {
            "gold.txt": "a cat sat\nthe dog ran\n",
            "samples/one.txt": "a cat sat\nthe dog ran\n",
            "bench.toml": '[[dataset]]\nname = "d"\ngold = "gold.txt"\nsamples = "samples"\n\n'
            '[[metric]]\nname = "distinct"\n',
        },
    )
    res = cli("compare", str(tmp_path / "bench.toml"), "--out", str(tmp_path / "out"))
    assert res.returncode == 0, res
    assert "comparing 1 system on 1 dataset with 1 metric" in res.stderr


def test_reproduce_step_summary_has_no_nested_parentheses():
    from cotk_repro.reproduce.job import describe_steps

    assert (
        describe_steps(
            [{"step": "wheel download", "seconds": 0.0, "status": "skipped", "reason": "environment cached"}]
        )
        == "wheel download skipped (environment cached)"
    )
    assert describe_steps([{"step": "run", "seconds": 1.234, "status": "ok"}]) == "run 1.2s"
    assert describe_steps([{"step": "image build", "seconds": 3.0, "status": "failed"}]) == "image build 3.0s (failed)"


def test_compare_help_is_escaped_as_rich_markup_would_escape_it():
    """compare's help is written out escaped (no Rich import at start-up); every `[` shows, none is markup."""
    from rich.markup import escape, render

    from cotk_repro.cli.compare_cmd import HELP

    plain = HELP.replace("\\[", "[")
    assert escape(plain) == HELP and render(HELP).plain == plain and "[[dataset]]" in plain


# -- issue 40: usage errors, -V, metavars -----------------------------------------------------------------------


def test_usage_errors_are_one_sentence_with_exit_2(cli, tmp_path):
    """Click's box (a frame of Rich characters over three lines) becomes one `Error:` line that names the help."""
    cases = {
        ("run", "--no-such-option"): "No such option: --no-such-option (see `cotk-repro run -h`)",
        ("no-such-command",): "No such command 'no-such-command' (see `cotk-repro -h`)",
        ("diff", "x"): "Missing argument 'B' (see `cotk-repro diff -h`)",
        ("runs", "extra"): "Got unexpected extra argument(s) (extra) (see `cotk-repro runs -h`)",
    }
    for args, sentence in cases.items():
        res = cli(*args, cwd=tmp_path)
        assert res.returncode == 2, res
        assert res.stderr.strip().splitlines() == [f"Error: {sentence}"], res
        assert "╭" not in res.stderr and "Usage:" not in res.stderr


def test_dash_capital_v_prints_the_version(cli, tmp_path):
    from cotk_repro import __version__

    for flag in ("-V", "--version"):
        res = cli(flag, cwd=tmp_path)
        assert res.returncode == 0 and res.stdout == f"cotk-repro {__version__}\n", res
    from cotk_repro.cli import root

    root.load_commands()
    from typer.testing import CliRunner

    res = CliRunner().invoke(root.app, ["-V"])  # the Typer app itself (not only the console script's fast path)
    assert res.exit_code == 0 and __version__ in res.output


def test_usage_lines_name_arguments_by_their_metavar(cli, tmp_path):
    diff = cli("diff", "--help", cwd=tmp_path, env={"COLUMNS": ""})
    assert "cotk-repro diff [OPTIONS] {A} {B}" in diff.stdout, diff  # Typer's braces mark a required argument
    publish = cli("publish", "--help", cwd=tmp_path, env={"COLUMNS": ""})
    assert "cotk-repro publish [OPTIONS] [ID]" in publish.stdout and "[[ID]]" not in publish.stdout, publish


def test_a_table_title_wraps_between_words_never_inside_a_record_id():
    """Issue 40: the reproduce table's title ("reproduction of sha256:<64 hex> (venv)") wrapped inside the id, at
    the width of the (narrower) table, on a terminal wide enough for it."""
    import io

    from rich.console import Console

    from cotk_repro.cli import output

    rid = "sha256:" + "0123456789abcdef" * 4
    t = output.table(f"reproduction of {rid} (venv) [b]x[/b]", ["metric", "verdict"], [["bleu", "reproduced"]])
    buf = io.StringIO()
    Console(file=buf, width=100, color_system=None).print(t)
    lines = buf.getvalue().splitlines()
    assert any(rid in line for line in lines), lines  # whole, on one line, though the table is 25 columns wide
    assert "[b]x[/b]" in buf.getvalue()  # a title is text, not markup


def test_long_signatures_and_urls_break_between_fields_in_an_80_column_table():
    """Issue 44: an 80-column terminal cut `hyps:4` into `hyps` / `:4`; a signature breaks after a `|`, a URL after a
    `/`, and each field stays whole (and the widest terminal keeps them on one line)."""
    import re

    from rich.console import Console

    from cotk_repro.cli import output

    sig = "distinct|n:2|tok:wordpunct-u18|hyps:4|refs:4|v:1"
    url = "http://127.0.0.1:45678/records/sha256:abcdef012345/reproductions"
    rows = [["distinct-2", "0.964286", "e4d7640e4366", sig], ["record", "", "", url]]
    for width in (80, 70):  # every field fits in the room left (a field wider than that still folds)
        console = Console(width=width, record=True, color_system=None)
        console.print(output.table("results", ["metric", "value", "hash", "signature"], rows, width=width), crop=False)
        text = console.export_text()
        cells = [line.split("│")[4].strip() for line in text.splitlines() if line.count("│") == 5]
        joined = "".join(cells)
        assert sig in joined and url.replace("http://", "") in joined.replace("http://", ""), text
        for field in re.split(r"[|/]", sig + "/" + url):
            if field:
                assert any(field in c for c in cells), (field, text)  # never cut inside a field
        assert max(len(line) for line in text.splitlines()) <= width
    wide = Console(width=200, record=True, color_system=None)
    wide.print(output.table("results", ["metric", "value", "hash", "signature"], rows, width=200), crop=False)
    assert sig in wide.export_text()  # room enough: one line
