"""``cotk-repro demo``: parsing and rendering; the work is in :mod:`cotk_repro.demo`."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import typer

from . import output


@contextlib.contextmanager
def _sigterm_as_exit() -> Iterator[None]:
    """SIGTERM as an exit (status 143) that runs the demo's clean-up, not a kill that leaves its folder behind."""

    def _terminated(signum: int, _frame: object) -> None:
        output.error("terminated (SIGTERM)")
        raise SystemExit(128 + signum)

    try:
        previous = signal.signal(signal.SIGTERM, _terminated)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def register(cli: typer.Typer) -> None:
    """Add the `demo` command (the whole evaluate, publish, reproduce loop) to `cli`."""

    @cli.command()
    def demo(
        folder: Path | None = typer.Option(
            None,
            "--dir",
            help="Folder for the demo, kept afterwards (default: a new "
            "temporary folder, removed at the end unless --keep).",
        ),
        keep: bool = typer.Option(
            False,
            "--keep",
            help="Keep the temporary folder (project, git remote, dashboard "
            "database) and print how to serve its dashboard again.",
        ),
        runtime: str | None = typer.Option(
            None,
            "--runtime",
            help="Runtime of the reproduction: venv or docker "
            "(default: docker when an engine and a local base image with the record's Python are there, "
            "else venv).",
        ),
        base_image: str | None = typer.Option(
            None,
            "--base-image",
            help="Docker base image for the docker runtime, when it has the record's Python "
            "(default: COTK_REPRO_BASE_IMAGE, else a local image with that Python, e.g. cotk-repro-base:trixie "
            "for 3.13).",
        ),
        host: str = typer.Option("127.0.0.1", "--host", help="Address of the embedded dashboard."),
        port: int = typer.Option(0, "--port", help="Port of the embedded dashboard (default: a free one)."),
        serve: bool = typer.Option(
            True,
            "--serve/--no-serve",
            help="Keep the dashboard serving until Ctrl-C (default), or exit when the loop is done.",
        ),
        json_out: bool = typer.Option(False, "--json", help="Print a JSON summary on stdout (implies --no-serve)."),
        trust_remote_code: bool = typer.Option(
            False,
            "--trust-remote-code",
            help="Accepted as `reproduce` takes it; the "
            "demo reproduces the sample project it wrote itself, which it trusts "
            "for the venv runtime either way.",
        ),
    ) -> None:
        """The whole loop on one machine: scaffold a sample project, run it, publish it to a local bare git
        remote and an embedded dashboard, reproduce it from the remote, print the verdict and the dashboard URL.
        """
        from ..demo import cleanup, run_demo
        from .core import render_verdicts

        image = base_image or os.environ.get("COTK_REPRO_BASE_IMAGE") or None
        with _sigterm_as_exit():
            result = run_demo(
                folder, runtime=runtime, base_image=image, host=host, port=port, keep=keep, on_status=output.info
            )
        kept = keep or folder is not None
        outcome = result.reproduction
        verdict = outcome.verdict
        from ..records.view import RecordView

        view = RecordView.of(result.record)
        try:
            if json_out:
                output.print_json(
                    {
                        "folder": str(result.folder),
                        "kept": kept,
                        "record_id": view.id,
                        "results": view.recorded_results(),
                        "dashboard": result.dashboard_url,
                        "record_url": result.record_url,
                        "runtime": result.runtime,
                        "reproduction": verdict,
                        "timings_s": result.timings,
                    }
                )
            else:
                rows = [
                    [name, output.fmt_value(item.value), output.fmt_hash(item.hash)]
                    for name, item in view.results.items()
                ]
                output.console.print(output.table(f"record {(view.id or '')[:19]}", ["metric", "value", "hash"], rows))
                if outcome.error is not None:
                    output.error(outcome.error.message, outcome.error.hint, outcome.error.log)
                else:
                    render_verdicts(
                        outcome.rows,
                        verdict["verdict"],
                        title=f"reproduction from the git remote ({result.runtime} runtime)",
                    )
                if kept:
                    output.console.print(f"project:   {result.project}", markup=False)
                stopped = "" if serve else " (stopped when this command exits)"
                output.console.print(f"dashboard: {result.dashboard_url}{stopped}", markup=False)
                if result.record_url:
                    output.console.print(f"record:    {result.record_url}", markup=False)
                output.info("took " + ", ".join(f"{k} {v:.1f}s" for k, v in result.timings.items()))
            if serve and not json_out:
                output.info("serving the dashboard; press Ctrl-C to stop")
                try:
                    while True:
                        time.sleep(3600)
                except KeyboardInterrupt:
                    output.info("stopped")
        finally:
            if result.stop:
                result.stop()
            if kept:
                output.info(
                    f"the demo is kept in {result.folder}; serve its dashboard again with: "
                    f"cotk-repro dashboard serve --db sqlite:///{result.folder / 'dashboard.db'}"
                )
            else:
                cleanup(result.folder)
                output.info(f"removed the demo folder {result.folder} (--keep keeps it)")
        if outcome.exit_code:
            raise typer.Exit(outcome.exit_code)
