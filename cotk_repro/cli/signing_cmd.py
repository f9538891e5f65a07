"""``cotk-repro keys`` and ``cotk-repro verify``: parsing and rendering; the work is in
:mod:`cotk_repro.core.signing` and :mod:`cotk_repro.verify`."""

from __future__ import annotations

from pathlib import Path

import typer

from ..errors import EXIT_NEGATIVE
from . import output


def register(cli: typer.Typer) -> None:
    """Add the `keys` and `verify` commands (record signing) to `cli`."""
    keys_group = typer.Typer(invoke_without_command=True)  # help: the callback's docstring

    @keys_group.callback()
    def keys(
        ctx: typer.Context, json_out: bool = typer.Option(False, "--json", help="Print the key as JSON on stdout.")
    ) -> None:
        """Show the SSH key that signs records and reproductions.

        The key is git's `user.signingkey` (a key file, or `key::ssh-ed25519 ...` to sign through ssh-agent),
        else ~/.ssh/id_ed25519; COTK_REPRO_SIGNING_KEY overrides both. Register it on a dashboard with
        `cotk-repro keys add` (it proves you hold the key).
        """
        if ctx.invoked_subcommand is not None:
            return
        from ..core.signing import find_signing_key

        key = find_signing_key(Path.cwd())
        info = (
            None
            if key is None
            else {
                "fingerprint": key.public.fingerprint,
                "type": key.public.key_type,
                "public_key": key.public.line,
                "comment": key.public.comment,
                "source": key.source,
                "agent": key.agent,
            }
        )
        if json_out:
            output.print_json({"key": info})
            return
        if key is None or info is None:
            output.warn("no SSH key to sign with: records are published unsigned")
            output.info(
                "set one up with `ssh-keygen -t ed25519` (writes ~/.ssh/id_ed25519), or point git at a "
                "key: `git config --global user.signingkey ~/.ssh/KEY` (a .pub or key::... literal signs "
                "through ssh-agent)"
            )
            raise typer.Exit(EXIT_NEGATIVE)
        output.console.print(
            f"{info['fingerprint']} ({info['type']}) from {info['source']}" + (" via ssh-agent" if key.agent else ""),
            markup=False,
        )
        output.console.print(key.public.line + (f" {key.public.comment}" if key.public.comment else ""), markup=False)

    @keys_group.command("add")
    def keys_add(
        dashboard: str | None = typer.Option(
            None, "--dashboard", help="Dashboard URL (default: the one `cotk-repro login` saved last)."
        ),
        json_out: bool = typer.Option(False, "--json", help="Print the registered key as JSON on stdout."),
    ) -> None:
        """Register your signing key on a dashboard, proving you hold it.

        Asks the dashboard for a one-time challenge naming you and it, checks both, signs the challenge with the
        key (ssh-keygen -Y sign, or ssh-agent for a key:: / .pub signing key) and sends the signature: a key
        counts only for whoever can sign with it. A key someone else registered without such a proof moves to
        you, with the records and reproductions it signed. Exit status 2 when the dashboard refuses.
        """
        from ..remote.dashboard import register_signing_key

        out = register_signing_key(dashboard, Path.cwd())
        if json_out:
            output.print_json(out)
            return
        output.info(
            f"registered the key {out['fingerprint']} for {out['user']} on {out['dashboard']}"
            + (
                f"; it was registered to {out['moved_from']} without proof: what it signed is yours now"
                if out.get("moved_from")
                else ""
            )
        )

    cli.add_typer(keys_group, name="keys")

    @cli.command()
    def verify(
        source: str = typer.Argument(..., help="user/repo (against COTK_REPRO_GIT_BASE), a git URL or a local path."),
        allowed_signers: str | None = typer.Option(
            None,
            "--allowed-signers",
            metavar="FILE",
            help="Allowed-signers "
            "file (ssh-keygen format: 'PRINCIPAL KEYTYPE BASE64') naming the "
            "authors' keys (default: git's gpg.ssh.allowedSignersFile).",
        ),
        allow_unsigned: bool = typer.Option(False, "--allow-unsigned", help="Unsigned records do not fail the check."),
        json_out: bool = typer.Option(False, "--json", help="Print one row per record as JSON on stdout."),
    ) -> None:
        """Check the signature of every record published at SOURCE, offline (SSHSIG, as ssh-keygen -Y verify).

        Exit status: 0 all signatures valid, 1 a record is unsigned, tampered or signed by a key not in the
        allowed signers, 2 SOURCE cannot be read.
        """
        from ..verify import UNSIGNED, VALID, verify_source

        rows = verify_source(source, allowed_signers_file=allowed_signers, cwd=Path.cwd())
        bad = [r for r in rows if r["status"] != VALID and not (allow_unsigned and r["status"] == UNSIGNED)]
        if json_out:
            output.print_json(rows)
        else:
            output.console.print(
                output.table(
                    f"signatures of the records of {source}",
                    ["id", "status", "signer", "key", "detail"],
                    [
                        [r["short_id"], r["status"], r["signer"] or "", r["fingerprint"] or "", r["detail"]]
                        for r in rows
                    ],
                )
            )
            output.info(f"{len(rows) - len(bad)} of {len(rows)} record(s) pass")
        if bad:
            raise typer.Exit(EXIT_NEGATIVE)
