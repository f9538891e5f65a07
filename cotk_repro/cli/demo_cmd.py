"""``cotk-repro demo``: parsing and rendering; the work is in :mod:`cotk_repro.demo`."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import typer

from . import output

#: the signals that end the demo the way Ctrl-C does: its dashboard and git daemon stopped, its folder removed
CLEANUP_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n))


class _Signals:
    """SIGTERM and SIGHUP end the demo the way Ctrl-C does, for its whole life (its loop, its serving): as a
    KeyboardInterrupt, the one interruption every step already cleans up after (the sample project's run stops
    its entry, ``reproduce`` its sandbox, the demo its servers and folder); :meth:`termination` then says which
    signal it was.

    While a reproduction runs, ``reproduce`` has its own handlers (the same KeyboardInterrupt); which signal came
    is read back from Python's wakeup file descriptor, where every signal with a Python handler writes its
    number, whoever's handler runs. A second signal while cleaning up is ignored: the clean-up is short."""

    def __init__(self) -> None:
        self.previous: dict[int, object] = {}
        self.signum: int | None = None
        self._pipe: tuple[int, int] | None = None
        self._old_fd = -1

    def _handler(self, signum: int, _frame: object) -> None:
        if self.signum is not None:
            return
        self.signum = signum
        raise KeyboardInterrupt

    def __enter__(self) -> _Signals:
        try:
            for sig in CLEANUP_SIGNALS:
                if sig != signal.SIGTERM and signal.getsignal(sig) is signal.SIG_IGN:
                    continue  # `nohup cotk-repro demo`: the user asked it to outlive the terminal
                self.previous[sig] = signal.signal(sig, self._handler)
        except ValueError:  # not the main thread: leave signals alone
            return self
        read, write = os.pipe()
        os.set_blocking(read, False)
        os.set_blocking(write, False)
        self._old_fd = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        self._pipe = (read, write)
        return self

    def termination(self) -> int | None:
        """SIGTERM or SIGHUP when one of them (not Ctrl-C's SIGINT) is the last interruption this process got."""
        if self.signum is None and self._pipe is not None:
            try:
                seen = os.read(self._pipe[0], 65536)
            except OSError:  # nothing written: BlockingIOError
                seen = b""
            wanted = {int(signal.SIGINT), *(int(s) for s in CLEANUP_SIGNALS)}
            last = next((b for b in reversed(seen) if b in wanted), None)
            if last is not None and last != signal.SIGINT:
                self.signum = last
        return self.signum

    def __exit__(self, *_exc: object) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
        if self._pipe is not None:
            signal.set_wakeup_fd(self._old_fd)
            for fd in self._pipe:
                os.close(fd)


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
        port: int = typer.Option(
            0,
            "--port",
            min=0,
            max=65535,
            show_default=False,
            help="Port of the embedded dashboard (0, the default: a free one).",
        ),
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
        """Run the whole loop on one machine: scaffold, run, publish, reproduce, print the verdict.

        A sample project is published to a local bare git remote and an embedded dashboard, then reproduced.

        SIGTERM and SIGHUP end it as Ctrl-C does: the dashboard and the git daemon stop, the temporary folder goes.
        """
        with _Signals() as signals:
            try:
                _demo(folder, keep, runtime, base_image, host, port, serve, json_out, signals)
            except BaseException:  # whatever it became on its way out (an interrupted run, a reproduce that stopped)
                signum = signals.termination()
                if signum is None:
                    raise
                output.error(f"terminated ({signal.Signals(signum).name})")
                raise SystemExit(128 + signum) from None


def _demo(
    folder: Path | None,
    keep: bool,
    runtime: str | None,
    base_image: str | None,
    host: str,
    port: int,
    serve: bool,
    json_out: bool,
    signals: _Signals,
) -> None:
    from ..demo import cleanup, run_demo
    from ..records.view import RecordView
    from .core import render_verdicts

    image = base_image or os.environ.get("COTK_REPRO_BASE_IMAGE") or None
    result = run_demo(folder, runtime=runtime, base_image=image, host=host, port=port, keep=keep, on_status=output.info)
    kept = keep or folder is not None
    outcome = result.reproduction
    verdict = outcome.verdict
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
                [name, output.fmt_value(item.value), output.fmt_hash(item.hash)] for name, item in view.results.items()
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
            if serve:  # with --no-serve the dashboard stops as this command ends: no URL that is already closed
                output.console.print(f"dashboard: {result.dashboard_url}", markup=False)
                if result.record_url:
                    output.console.print(f"record:    {result.record_url}", markup=False)
            output.info("took " + ", ".join(f"{k} {v:.1f}s" for k, v in result.timings.items()))
        if serve and not json_out:
            output.info("serving the dashboard; press Ctrl-C to stop")
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                if signals.termination() is not None:
                    raise  # SIGTERM / SIGHUP: said as such once the clean-up below is done
                output.info("stopped")
    finally:
        if result.stop:
            result.stop()
        if kept:
            output.info(
                f"the demo is kept in {result.folder}; see its record on its dashboard with: "
                f"cotk-repro dashboard serve --db sqlite:///{result.folder / 'dashboard.db'}"
            )
        else:
            cleanup(result.folder)
            output.info(f"removed the demo folder {result.folder} (--keep keeps it)")
    if outcome.exit_code:
        raise typer.Exit(outcome.exit_code)
