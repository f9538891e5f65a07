"""``cotk-repro significance``: paired significance tests of systems against a baseline. Parsing and rendering only;
the tests are :mod:`cotk_repro.metrics.significance`."""

from __future__ import annotations

from pathlib import Path

import typer

from . import output


def register(cli: typer.Typer) -> None:
    """Add the `significance` command (paired bootstrap / approximate randomization against a baseline) to `cli`."""

    @cli.command("significance")
    def significance(
        refs: Path | None = typer.Option(
            None,
            "--refs",
            metavar="FILE",
            help='References, as evaluate reads them: one per line, or JSONL {"references": [...]} lines for '
            "several per hypothesis.",
        ),
        baseline: Path = typer.Option(
            ..., "--baseline", metavar="FILE", help="The baseline system's outputs, one per line."
        ),
        systems: list[Path] = typer.Option(
            ...,
            "--systems",
            metavar="FILE",
            help="The systems to test against the baseline, one per line each (several files after one "
            "--systems, or the option repeated).",
        ),
        metric: str = typer.Option(
            "bleu",
            "--metric",
            "-m",
            metavar="NAME",
            help="The metric (one whose `metrics --json` resampling is not none).",
        ),
        queries: Path | None = typer.Option(
            None,
            "--queries",
            metavar="FILE",
            help="The query each line answers, one per line, for metrics that read it (llm-judge, llm-pairwise).",
        ),
        option: list[str] | None = typer.Option(
            None,
            "--option",
            "-o",
            metavar="METRIC.KEY=VALUE",
            help="A metric option (repeatable), as in evaluate, e.g. bleu.tokenizer=13a.",
        ),
        method: str = typer.Option(
            "bs",
            "--method",
            metavar="bs|ar",
            help="bs: paired bootstrap resampling (Koehn 2004), with intervals; ar: approximate randomization "
            "(Riezler & Maxwell 2005), p-values only.",
        ),
        samples: int | None = typer.Option(
            None,
            "--samples",
            metavar="N",
            help="Bootstrap resamples (default 1000) or randomization trials (default 10000), as sacrebleu.",
        ),
        seed: int | None = typer.Option(
            None, "--seed", metavar="S", help="The seed of numpy's default_rng (default 12345, sacrebleu's)."
        ),
        more_systems: list[Path] | None = typer.Argument(
            None,
            metavar="[FILE ...]",
            help="More systems: the files that follow --systems FILE (--systems A.txt C.txt).",
            show_default=False,
        ),
        json_out: bool = typer.Option(
            False,
            "--json",
            help='A JSON list on stdout: one {"system", "metric", "score", "mean", "ci", "p_value"} object per '
            "system (the baseline first, p_value null) and result key, on the metric's own scale.",
        ),
    ) -> None:
        """Is the difference real? Paired tests of each system against the baseline, sacrebleu's way.

        Each system's score, its bootstrap mean +- 95% half-width (bs) and the p-value of its difference to the
        baseline; '*' marks p < 0.05. The method, samples and seed are added to the metric's signature.
        """
        from ..metrics.files import parse_options
        from ..metrics.significance import ALPHA, significance_files

        opts = parse_options(list(option or []), [metric]).get(metric, {})
        report = significance_files(
            refs,
            baseline,
            [*systems, *(more_systems or [])],
            metric,
            opts,
            method=method,
            samples=samples,
            seed=seed,
            queries_path=queries,
        )
        if json_out:
            output.print_json(report.as_json())
            return
        for key, sig in report.signatures.items():
            rows = []
            for row in (r for r in report.rows if r.metric == key):
                interval = "" if row.mean is None or row.ci is None else f"{row.mean:.4f} ± {row.ci:.4f}"
                p = (
                    "(baseline)"
                    if row.p_value is None
                    else f"{row.p_value:.4f}" + (" *" if row.p_value < ALPHA else "")
                )
                rows.append([row.system, f"{row.score:.4f}", *([interval] if report.method == "bs" else []), p])
            columns = ["system", key, *(["mean ± 95% CI"] if report.method == "bs" else []), "p-value"]
            output.console.print(output.table(sig, columns, rows))
        output.console.print(output.safe(report.explanation()))
