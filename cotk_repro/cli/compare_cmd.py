"""``cotk-repro compare CONFIG``: comparison reports over systems x datasets x metrics. Parsing and rendering only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from . import output


def _cell_text(c: Any) -> str:
    if c is None:
        return ""
    if c.error is not None:
        return "failed"
    text = f"{c.value:.4f}"
    if c.ci is not None:
        text += f" ± {c.ci:.4f}" + (" *" if c.significant else "") + (" (best)" if c.best else "")
    if c.rank is not None:
        text += f" #{c.rank}"
    if c.hash is None:
        text += " (no hash)"
    elif c.group != "A":
        text += f" [{c.group}]"
    if not c.pinned:
        text += " (unpinned)"
    return text


def render_tables(result: Any) -> None:
    """One table per dataset: rows systems and columns metrics, or transposed when metrics outnumber systems."""
    from rich.table import Table
    from rich.text import Text

    columns = result.all_columns()
    for d in result.datasets:
        t = Table(title=Text(f"dataset {d}"), show_lines=False)
        if len(columns) > len(result.systems):
            t.add_column("metric", overflow="fold")
            for s in result.systems:
                t.add_column(Text(s), overflow="fold", justify="right")
            for c in columns:
                t.add_row(
                    Text(output.safe(c)), *[Text(output.safe(_cell_text(result.cell(s, d, c)))) for s in result.systems]
                )
        else:
            t.add_column("system", overflow="fold")
            for c in columns:
                t.add_column(Text(c), overflow="fold", justify="right")
            for s in result.systems:
                t.add_row(Text(output.safe(s)), *[Text(output.safe(_cell_text(result.cell(s, d, c)))) for c in columns])
        output.console.print(t)
    if result.config.intervals:
        baselines = ", ".join(f"{d.baseline} on {d.name}" for d in result.config.datasets if d.baseline)
        output.console.print(
            Text(
                "± : half the bootstrap 95% interval (1,000 resamples, seed 12345); (best): the best value and every "
                "system not significantly different from it"
                + (
                    f"; * : significantly different from the baseline ({baselines}), paired bootstrap p < 0.05 after "
                    "Holm-Bonferroni over the column"
                    if baselines
                    else ""
                )
            )
        )
    flagged = [c for c in result.cells if c.flag and c.error is None]
    if flagged:
        output.console.print(
            Text(
                "[B], [C]...: hash differs from the column's main group A: not ranked together; "
                "#n: rank within its group; (unpinned): an endpoint's model, ranked below every pinned system"
            )
        )
        for c in flagged:
            output.console.print(Text(output.safe(f"  {c.system} / {c.dataset} / {c.column}: {c.flag}")))


# Rich markup (Typer renders help with it): "\[" shows a literal "[", written out here as rich.markup.escape
# would give it, so that registering the command does not import Rich (tests/test_cli_text.py checks it)
HELP = r"""Score many systems on many datasets with many metrics: CSV tables, bar charts and report.html.

Every value keeps its comparability hash; values whose hashes differ within one column are flagged and never ranked together. Exit 0 when everything was scored, 1 when a system or metric failed (the report still holds everything else), 2 on a config error (the message names the file and line; nothing is written).

CONFIG is TOML; paths in it are relative to its folder; unknown keys are errors:

\[report]: out = "reports" (report folder), title, jobs (worker processes), cache (generator outputs), charts, html.

[\[dataset]]: name; path = a folder holding gold/refs.txt (one reference per line) or gold/refs.jsonl (one {"references": [...]} per line) and samples/<system>.txt (one sample per line); or gold = FILE and samples = FOLDER; inputs = FILE (what generator systems read); format, gold_format (text formats).

[\[system]] (optional; default: every samples/<system>.txt, which must exist in every dataset): name; samples = FILE or { dataset = FILE }; or generator = NAME (a registered generator) with settings = {...} and optionally protocol = FILE (a prompt protocol: its hash joins every metric hash of the system), outputs cached by generator name, version, settings, inputs and protocol; format; datasets = [...].

[\[metric]]: name (a registered metric, see cotk-repro plugins); options = {...}; label (e.g. "bleu-2"); keys = [...] (result keys kept); references = "aligned" (one gold line per sample line), "set" (the whole gold set) or "none"; higher_is_better.

\[format] and \[formats.NAME]: tokenized, tokenizer, strip_tags = ["<eos>", ...], strip_pattern (a regex), sentence_separator, sentence_joiner, reference_separator (several references on one gold line), lowercase.

Example:

  [\[dataset]]
  name = "news"
  path = "data/news"

  [\[metric]]
  name = "bleu"
  label = "bleu-2"
  options = { ngram = 2 }

Writes metric-<column>.csv (rows systems, columns datasets), corpus-<dataset>.csv (rows systems, columns metrics), their -hashes.csv twins, results.csv, results.json, chart-<column>.png and report.html. See docs/compare.md.
"""


def register(cli: typer.Typer) -> None:
    """Add the `compare` command (benchmark report over systems x datasets x metrics) to `cli`."""

    @cli.command("compare", help=HELP)
    def compare(
        config: Path = typer.Argument(
            ...,
            metavar="CONFIG",
            help="The benchmark config (TOML): datasets, systems, metrics, text formats; see docs/compare.md.",
        ),
        out: Path | None = typer.Option(
            None,
            "--out",
            "-o",
            help="Folder for the report (default: report.out in the config, else reports/ beside it).",
        ),
        jobs: int | None = typer.Option(
            None,
            "--jobs",
            "-j",
            min=1,
            help="Worker processes evaluating "
            "(system, dataset, metric) tasks in parallel (default: report.jobs, else "
            "the number of CPUs); they also draw the charts. 1 runs everything in this process.",
        ),
        open_report: bool = typer.Option(False, "--open", help="Open report.html in the web browser when done."),
        json_out: bool = typer.Option(
            False,
            "--json",
            help="Print the whole result (cells with values, hashes, "
            "groups, ranks, flags; failures; files) as JSON on stdout.",
        ),
    ) -> None:
        from ..compare import as_json, evaluate_config, load_config, write_report
        from ..compare.engine import count_tasks

        cfg = load_config(config, out=out, jobs=jobs)
        output.info(
            f"comparing {output.plural(len(cfg.systems), 'system')} on "
            f"{output.plural(len(cfg.datasets), 'dataset')} with {output.plural(len(cfg.metrics), 'metric')}"
        )
        with output.progress("evaluating", total=count_tasks(cfg)) as advance:
            result = evaluate_config(cfg, jobs=jobs, on_progress=lambda done, total: advance())
        files = write_report(result)
        if json_out:
            output.print_json(as_json(result, files))
        else:
            render_tables(result)
        for w in result.warnings:
            output.warn(w)
        for f in result.failures:
            what = f"metric {f.metric}" if f.metric else "system"
            output.warn(f"{what} failed for {f.system} on {f.dataset}: {f.message}")
        output.info(f"report written to {cfg.out} ({len(files)} files, {result.wall_seconds:.1f} s)")
        if open_report:
            html = cfg.out / "report.html"
            if html.is_file():
                import webbrowser

                if not webbrowser.open(html.resolve().as_uri()):
                    output.warn(f"no web browser could be started; open {html} yourself")
            else:
                output.warn("no report.html was written (html = false in [report] of the config)")
        if result.failures:
            raise typer.Exit(1)
