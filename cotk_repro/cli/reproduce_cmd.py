"""``cotk-repro reproduce``: parsing and rendering; the work is in :mod:`cotk_repro.reproduce`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from typer.core import TyperCommand

from ..errors import EXIT_ERROR
from . import output


class _OptionalJsonValue(TyperCommand):
    """``--json`` alone means stdout; ``--json FILE`` writes the verdict to FILE."""

    def parse_args(self, ctx, args):
        args = list(args)
        for i, a in enumerate(args):
            if a == "--":
                break
            if a == "--json" and (i + 1 == len(args) or (args[i + 1].startswith("-") and args[i + 1] != "-")):
                args[i] = "--json=-"
        return super().parse_args(ctx, args)


def _render_list(records) -> None:
    rows = [
        [
            (r["id"] or "").removeprefix("sha256:")[:12],
            r.get("status"),
            r.get("started_at"),
            (r.get("commit") or "")[:8],
            r.get("entry"),
            ", ".join(f"{k}={output.fmt_value(v)}" for k, v in (r.get("results") or {}).items()),
        ]
        for r in records
    ]
    output.console.print(
        output.table(
            "published records (newest first)", ["id", "status", "started", "commit", "entry", "results"], rows
        )
    )


def _write_json(path: str, data) -> None:
    try:
        Path(path).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as exc:
        output.error(f"cannot write {path}: {exc.strerror}")
        raise typer.Exit(EXIT_ERROR) from None


def _on_terminal() -> bool:
    return sys.stdin.isatty() and sys.stderr.isatty()


def _confirm(consent) -> bool:
    """The interactive consent of a host runtime: names the repository, the commit and the user."""
    output.warn(consent.question())
    return typer.confirm("Run it?", default=False, err=True)


def register(cli: typer.Typer) -> None:
    """Add the `reproduce` command (rerun a published record and compare) to `cli`."""

    @cli.command(cls=_OptionalJsonValue)
    def reproduce(
        source: str = typer.Argument(
            ...,
            help="user/repo (against COTK_REPRO_GIT_BASE, default https://github.com/), "
            "a git URL, a local path, or a dashboard record URL.",
        ),
        record: str | None = typer.Option(
            None, "--record", help="Record id or unique prefix (default: the newest successful one)."
        ),
        list_: bool = typer.Option(False, "--list", help="List the published records of SOURCE and exit."),
        runtime: str | None = typer.Option(
            None,
            "--runtime",
            help="docker (default: isolated container), venv (a "
            "virtual environment on this host) or local (this Python environment); host "
            "runtimes must be chosen here: the project's reproduce.runtime may only "
            "pick one that isolates the code.",
        ),
        base_image: str | None = typer.Option(
            None,
            "--base-image",
            help="Docker base image, with the record's Python minor version (default: reproduce.base_image "
            "of your user config, else COTK_REPRO_BASE_IMAGE, else the recorded "
            "python:X.Y-slim, else a local image with Python X.Y). The project's reproduce.base_image is used only with "
            "--allow-project-image.",
        ),
        python: str | None = typer.Option(
            None,
            "--python",
            metavar="PATH",
            help="Python interpreter of --runtime venv; it must be the record's Python minor version "
            "(default: this Python when it is, else pythonX.Y on PATH).",
        ),
        allow_project_image: bool | None = typer.Option(
            None,
            "--allow-project-image/--no-project-image",
            help="Use the base image the reproduced project's config names "
            "(it may be pulled from a registry; default: "
            "reproduce.allow_project_image of your user config, else no).",
        ),
        rtol: float | None = typer.Option(
            None,
            "--rtol",
            help="Relative tolerance for every metric; it only tightens the one each metric declares "
            "(`cotk-repro metrics`; the project's config may tighten it too) unless --widen-tolerance.",
        ),
        atol: float | None = typer.Option(
            None, "--atol", help="Absolute tolerance for every metric; tightens only, as --rtol."
        ),
        widen_tolerance: bool = typer.Option(
            False,
            "--widen-tolerance",
            help="Judge with --rtol/--atol as given even where wider than a metric declares (and accept the "
            "project's wider per-metric values); the verdict marks each such metric widened.",
        ),
        timeout: float | None = typer.Option(
            None,
            "--timeout",
            help="Wall-time limit in seconds of each step that runs "
            "the record's code: every sandbox wheel build, the image build, and the "
            "run (default: reproduce.timeout of your user config, else 3600). The "
            "project's config may only lower it.",
        ),
        memory: str | None = typer.Option(
            None,
            "--memory",
            help="Memory limit of the container, e.g. 4g (docker; "
            "default: your user config, else 4g; the project may only lower it).",
        ),
        cpus: float | None = typer.Option(
            None,
            "--cpus",
            help="CPU limit of the container (docker; default: your "
            "user config, else 2; the project may only lower it).",
        ),
        disk: str | None = typer.Option(
            None,
            "--disk",
            help="Writable space of the container, e.g. 1g: its work "
            "folder (home) and /tmp are each a tmpfs of this size, the rest is read-only "
            "(docker; default: your user config, else 1g; the project may only lower it).",
        ),
        trust_remote_code: bool = typer.Option(
            False,
            "--trust-remote-code",
            help="Let --runtime venv or local run the "
            "record's code on this host (and build its packages here) without asking. "
            "Without it they ask on a terminal, and refuse (exit 2) without one. "
            "The docker runtime needs no flag.",
        ),
        submit: bool = typer.Option(
            False, "--submit", help="Send the verdict to your dashboard (needs `cotk-repro login`)."
        ),
        dashboard: str | None = typer.Option(
            None,
            "--dashboard",
            help="Dashboard for --submit (default: "
            "COTK_REPRO_DASHBOARD_URL, else the one you logged in to; never one "
            "named by the reproduced project).",
        ),
        allow_unsigned: bool = typer.Option(
            False,
            "--allow-unsigned",
            help="Reproduce even when the record is "
            "unsigned or its signature does not verify (otherwise: could not run, "
            "before anything from the record is built or run).",
        ),
        keep: bool = typer.Option(
            False, "--keep", help="Keep the work folder (checkout, build context, logs) for debugging."
        ),
        image_cache: int | None = typer.Option(
            None,
            "--image-cache",
            min=0,
            max=1000,
            metavar="N",
            help="Keep the N most recently used reproduction images (docker) after the verdict, for the next "
            "reproduction of the same environment (default: reproduce.image_cache of your user config, else 0: "
            "each image is removed once its verdict is in).",
        ),
        json_out: str | None = typer.Option(
            None,
            "--json",
            metavar="[FILE]",
            help="Print the verdict JSON on stdout (nothing else), or write it to FILE and still show the table.",
        ),
    ) -> None:
        """Fetch a published record and its code, rebuild the environment, rerun the entry and diff the results.

        Exit status: 0 reproduced, 1 not reproduced, 2 could not run.
        """
        from ..records.tolerances import unused_flags
        from ..reproduce.core import ReproduceOptions, list_records
        from ..reproduce.core import reproduce as do_reproduce
        from ..reproduce.job import describe_steps
        from .core import render_verdicts

        if list_:
            skipped: list = []
            records = list_records(source, skipped)
            for _path, why in skipped:
                output.warn(why)
            if json_out and json_out != "-":
                _write_json(json_out, records)
            if json_out == "-":
                output.print_json(records)
            else:
                _render_list(records)
            return
        opts = ReproduceOptions(
            record=record,
            runtime=runtime,
            base_image=base_image,
            python=python,
            rtol=rtol,
            atol=atol,
            widen_tolerance=widen_tolerance,
            timeout=timeout,
            memory=memory,
            cpus=cpus,
            disk=disk,
            allow_project_image=allow_project_image,
            keep=keep,
            image_cache=image_cache,
            submit=submit,
            dashboard=dashboard,
            allow_unsigned=allow_unsigned,
            trust_remote_code=trust_remote_code,
            confirm=_confirm if _on_terminal() else None,
        )
        outcome = do_reproduce(source, opts, on_status=output.info, progress=lambda d: output.progress(d))
        verdict = outcome.verdict
        for a in outcome.alerts:
            output.warn(a)
        for n in outcome.notices:  # what a reproducer may want to know (a valid signature): info, not a warning
            output.info(n)
        if json_out and json_out != "-":
            _write_json(json_out, verdict)
        if outcome.error is not None:
            exc = outcome.error
            output.error(exc.message, exc.hint, exc.log)
        if json_out == "-":
            output.print_json(verdict)
        elif outcome.error is None:
            title = f"reproduction of {verdict['record_id']} ({verdict['runtime']})"
            render_verdicts(outcome.rows, verdict["verdict"], title=title)
            diffs = verdict["environment_differences"]
            if diffs:
                shown = ", ".join(f"{d['what']} {d['a']} -> {d['b']}" for d in diffs[:8])
                output.console.print(
                    output.safe(f"environment differs from the record: {shown}")
                    + (f" ... ({len(diffs)} in all)" if len(diffs) > 8 else ""),
                    markup=False,
                )
        elif getattr(outcome.error, "step", None) != "source":  # a SOURCE that names nothing: the error says it all
            output.console.print("[bold]could not run[/bold]")
        for w in outcome.warnings:
            output.warn(w)
        unused = unused_flags(outcome.rows, rtol, atol, widen_tolerance)
        if unused:
            output.warn(unused)
        if outcome.submission:
            output.info(f"submitted to {outcome.submission.get('dashboard')}: {outcome.submission.get('url') or ''}")
        if outcome.workdir is not None:
            output.info(f"work folder kept: {outcome.workdir}")
        steps = describe_steps(outcome.steps)
        if steps and getattr(outcome.error, "step", None) != "source":
            output.info(f"steps: {steps}")
        if outcome.exit_code:
            raise typer.Exit(outcome.exit_code)

    register_gc(cli)


def register_gc(cli: typer.Typer) -> None:
    """Add the `gc` command: remove what reproductions left behind past their deadline."""

    @cli.command("gc")
    def gc(
        dry_run: bool = typer.Option(False, "--dry-run", help="Only list what would be removed."),
        json_out: bool = typer.Option(False, "--json", help="Print what was removed as JSON."),
    ) -> None:
        """Remove what reproductions left behind: their containers, scratch volumes and work folders.

        Only those past their deadline or whose reproducer is gone (killed, closed terminal); reproduce does this too.

        Exit status: 0 done (also when nothing was left), 2 when something could not be removed.
        """
        from ..reproduce import ReproduceError
        from ..reproduce.engine import connect
        from ..reproduce.gc import collect

        client = None
        notes: list[str] = []
        try:
            client = connect(timeout=30)
        except ReproduceError as exc:
            notes.append(f"Docker left alone: {exc.message}")
        report = collect(client, dry_run=dry_run)
        if json_out:
            output.print_json({**report.as_dict(), "dry_run": dry_run, "notes": notes})
        else:
            for n in notes:
                output.warn(n)
            verb = "would remove" if dry_run else "removed"
            output.info(f"{verb} {report.describe()}")
            for kind, names in (
                ("container", report.containers),
                ("volume", report.volumes),
                ("work folder", report.workdirs),
            ):
                for name in names:
                    output.console.print(f"{kind} {name}", markup=False, highlight=False)
            for e in report.errors:
                output.error(e)
        if report.errors:
            raise typer.Exit(EXIT_ERROR)
