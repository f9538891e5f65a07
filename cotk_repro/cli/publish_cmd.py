"""``cotk-repro publish`` and ``cotk-repro login``: parsing and rendering; the work is in :mod:`cotk_repro.publish`."""

from __future__ import annotations

from pathlib import Path

import typer

from . import output


def _render_steps(steps) -> None:
    rows = []
    for s in steps:
        where = s.get("url") or s.get("dashboard") or ""
        detail = s.get("detail") or ""
        if s.get("target") == "git":
            detail = f"ref {s.get('ref')}; code {s.get('code')}" + (
                f"; GitHub repository {s['github']}" if s.get("github") else ""
            )
        rows.append([s.get("target"), s.get("status"), where, detail])
    output.console.print(output.table("published", ["target", "status", "where", "detail"], rows))


def register(cli: typer.Typer) -> None:
    """Add the `publish` and `login` commands to `cli`."""

    @cli.command()
    def publish(
        record_id: str = typer.Argument(
            "latest", metavar="ID", help="Local record id, unique prefix, or `latest` (default)."
        ),
        remote: str | None = typer.Option(
            None, "--remote", help="Git remote to push to (default: publish.remote in cotk-repro.toml, else origin)."
        ),
        dashboard: str | None = typer.Option(
            None,
            "--dashboard",
            help="Dashboard URL (default: dashboard.url in cotk-repro.toml, else the one you logged in to).",
        ),
        target: list[str] | None = typer.Option(
            None,
            "--target",
            "-T",
            metavar="NAME",
            help="A publish target to "
            "run (repeatable, in order; default: publish.targets in "
            "cotk-repro.toml, else git then dashboard). Any registered "
            "target, see `cotk-repro plugins`.",
        ),
        no_git: bool = typer.Option(False, "--no-git", help="Do not push to the git remote."),
        no_dashboard: bool = typer.Option(False, "--no-dashboard", help="Do not upload to the dashboard."),
        push: bool = typer.Option(
            False, "--push", help="Also push the recorded commit's branch when the remote does not have the commit yet."
        ),
        allow_unsigned: bool = typer.Option(
            False,
            "--allow-unsigned",
            help="Upload without a signing key (for a dashboard started with --allow-unsigned); without it, no key "
            "and a dashboard among the targets stop the publish before anything is sent.",
        ),
        json_out: bool = typer.Option(False, "--json", help="Print the publish report as JSON on stdout."),
    ) -> None:
        """Push the record's commit and the record (records ref) to the git remote, and upload it to the dashboard.

        Idempotent: publishing the same record again changes nothing. The local record is never modified.
        """
        from ..publish import PublishError
        from ..publish.core import publish as do_publish

        try:
            report = do_publish(
                Path.cwd(),
                record_id,
                remote=remote,
                dashboard=dashboard,
                use_git=not no_git,
                use_dashboard=not no_dashboard,
                push=True if push else None,
                targets=list(target) if target else None,
                on_status=output.info,
                allow_unsigned=allow_unsigned,
            )
        except PublishError as exc:
            if exc.steps and not json_out:
                _render_steps(exc.steps)
            raise
        for w in report["warnings"]:
            output.warn(w)
        if json_out:
            output.print_json(report)
            return
        output.console.print(f"record {report['id']}", markup=False)
        _render_steps(report["steps"])

    @cli.command()
    def login(
        dashboard: str = typer.Option(..., "--dashboard", help="Dashboard URL, e.g. https://dash.example.org."),
        token: str | None = typer.Option(
            None,
            "--token",
            help="Your token (from `cotk-repro dashboard add-user` on "
            "the server). Left out or `-`: read from standard input (a hidden prompt "
            "on a terminal); a value here shows in `ps` and in your shell history.",
        ),
        check: bool = typer.Option(
            True,
            "--check/--no-check",
            help="Check with the dashboard that it answers and "
            "accepts the token before saving (default); --no-check saves without asking it.",
        ),
        register_key: bool = typer.Option(
            False,
            "--register-key",
            help="Also register your signing key on the "
            "dashboard, proving you hold it (the same as `cotk-repro keys add`).",
        ),
    ) -> None:
        """Store dashboard credentials in your user config (file mode 0600, never in a repository).

        By default the dashboard is asked who the token belongs to: a dead URL or a refused token exits 2 and
        saves nothing.
        """
        from ..core import userconfig
        from ..remote.dashboard import DashboardClient

        url = userconfig.normalize_url(dashboard)
        if token is None or token == "-":
            token = _read_token(url)
        who = DashboardClient(url, token, retries=1).whoami() if check else None  # DashboardError: exit 2
        written = userconfig.set_dashboard_token(url, token)
        output.info(f"saved the token{f' of {who}' if who else ''} for {url} in {written}")
        if register_key:
            from ..remote.dashboard import register_signing_key

            out = register_signing_key(url, Path.cwd())
            output.info(f"registered the key {out['fingerprint']} for {out['user']} on {url}")


def _read_token(url: str) -> str:
    """The token from a hidden prompt on a terminal, else the first line of standard input."""
    import sys

    from ..errors import CotkError

    if sys.stdin is not None and sys.stdin.isatty():
        import getpass

        token = getpass.getpass(f"token for {url}: ")
    else:
        token = (sys.stdin.readline() if sys.stdin is not None else "").strip()
    if not token:
        raise CotkError(
            "no token was given (type it at the prompt, or pipe it: `cotk-repro login --dashboard URL < token-file`)"
        )
    return token
