"""``cotk-repro metrics``: every registered metric with the facts it declares and its options. Rendering only."""

from __future__ import annotations

from typing import Any

import typer

from . import output


def _range(r: list[Any]) -> str:
    lo, hi = ("-inf" if r[0] is None else f"{r[0]:g}"), ("inf" if r[1] is None else f"{r[1]:g}")
    return f"[{lo}, {hi}]"


def register(cli: typer.Typer) -> None:
    """Add the `metrics` command (list registered metrics and their facts) to `cli`."""

    @cli.command("metrics")
    def metrics(
        json_out: bool = typer.Option(
            False,
            "--json",
            help="A JSON list on stdout: per metric its name, "
            "plugin, higher_is_better, value_range ([low, high], null = "
            "unbounded), needs_references, paired_references, references "
            "(aligned/set/none), level, cost, tolerance ({rtol, atol}: how far a value may move on "
            "another machine; 0 and 0 for exact metrics), result_keys, key_facts, version, options, resampling "
            "(statistics, values or none: how a resample is scored for intervals and paired tests) and "
            "no_interval (why a metric has none, else null).",
        ),
    ) -> None:
        """Every registered metric (built-in or plugin) with the facts it declares about itself.

        Direction, value range, reference use, level, cost and tolerance come from the metric's own class (see
        docs/metrics.md, "The metric contract" and "Tolerances"); compare, evaluate, reproduce, diff and the
        dashboard read the same facts.
        """
        from ..metrics.facts import describe_metrics
        from ..records.tolerances import describe as describe_tolerance

        items = describe_metrics()
        if json_out:
            output.print_json(items)
            return
        rows = []
        for m in items:
            if "error" in m:
                rows.append([m["name"], "", "", "", "", "", "", "BROKEN: " + m["error"]])
                continue
            opts = ", ".join(o["name"] for o in m["options"])
            rows.append(
                [
                    m["name"],
                    "higher" if m["higher_is_better"] else "lower",
                    _range(m["value_range"]),
                    m["references"],
                    m["level"],
                    f"{m['cost']:g}",
                    describe_tolerance(m["tolerance"]["rtol"], m["tolerance"]["atol"]),
                    opts,
                ]
            )
        output.console.print(
            output.table(
                "metrics",
                ["metric", "better", "range", "references", "level", "cost", "tolerance", "options"],
                rows,
            )
        )
