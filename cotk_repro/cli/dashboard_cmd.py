"""``cotk-repro dashboard ...``: serve, worker, add-user, revoke-token, users, migrate.

Parsing and rendering only; the work is in :mod:`cotk_repro.dashboard`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from . import output

DB_HELP = (
    "Database URL: sqlite:////abs/path.sqlite3 or postgresql+psycopg://user@host:port/db "
    "(default: $COTK_REPRO_DASHBOARD_DB, else dashboard.sqlite3 in the user data dir, $XDG_DATA_HOME/cotk-repro)."
)


def _read_pub(path: Path) -> str:
    from ..core.signing import SigningError, parse_public_key
    from ..errors import CotkError

    try:
        text = path.expanduser().read_text(encoding="utf-8", errors="replace").strip()
    except OSError as exc:
        raise CotkError(f"cannot read the SSH public key {path}: {exc.strerror}") from None
    try:
        parse_public_key(text)
    except SigningError as exc:
        raise CotkError(f"{path}: {exc.message}") from None
    return text


def _add_keys(database, name: str, keys: list[str]) -> None:
    from ..dashboard.identity import add_key

    for text in keys:
        key = add_key(database, name, text)
        output.info(f"registered the key {key['fingerprint']} ({key['type']}) for {name}")


def register(cli: typer.Typer) -> None:
    """Add the `dashboard` command group (serve, users, keys, tokens, migrate) to `cli`."""
    group = typer.Typer(help="Run the results dashboard and manage its users.", no_args_is_help=True)
    cli.add_typer(group, name="dashboard")

    @group.command()
    def serve(
        db: str | None = typer.Option(None, "--db", help=DB_HELP),
        host: str = typer.Option(
            "127.0.0.1", "--host", help="Address to listen on (0.0.0.0 to expose it; put TLS in front)."
        ),
        port: int = typer.Option(8000, "--port", min=0, max=65535, help="Port to listen on (0: any free port)."),
        workers: int = typer.Option(
            1, "--workers", min=1, max=64, help="Worker processes (use PostgreSQL for more than a few)."
        ),
        max_body: int = typer.Option(
            5 * 1024 * 1024, "--max-body", min=1024, help="Largest request body accepted, in bytes (larger: 413)."
        ),
        rate_limit: str = typer.Option(
            "3000/60",
            "--rate-limit",
            help="Writes allowed per token (or client address), as N/SECONDS, e.g. 600/60; 'off' to disable.",
        ),
        read_rate_limit: str | None = typer.Option(
            None, "--read-rate-limit", help="Reads allowed per client address, as N/SECONDS (default: unlimited)."
        ),
        public_url: str | None = typer.Option(
            None,
            "--public-url",
            help="The URL users reach the dashboard at, named by key proofs and links in API answers "
            "(required beyond loopback; on loopback key proofs name the address bound to).",
        ),
        trusted_proxy: list[str] = typer.Option(
            [],
            "--trusted-proxy",
            metavar="ADDR",
            help="An address or network (repeatable) whose X-Forwarded-For / X-Forwarded-Proto is believed, "
            "e.g. your TLS proxy's (default: nobody's; the client address is the connection's).",
        ),
        access_log: bool = typer.Option(True, "--access-log/--no-access-log", help="Log every request."),
        allow_unsigned: bool = typer.Option(
            False,
            "--allow-unsigned",
            help="Accept records and reproductions without "
            "an SSH signature (shown as unsigned; default: refused with 403).",
        ),
        reproduce_queue: bool = typer.Option(
            False,
            "--reproduce-queue",
            help="Give every record accepted a "
            "reproduction job, drained by `cotk-repro dashboard worker` processes "
            "(PostgreSQL only; docs/fleet.md).",
        ),
        verified_by: int = typer.Option(
            1,
            "--verified-by",
            min=1,
            max=100,
            metavar="K",
            help="Reproducers other than the signer (each signing with a proven key) whose identical or "
            "within-tolerance reruns verify a record: the top tier (the worker pool's alone also does).",
        ),
    ) -> None:
        """Run the dashboard (creates or upgrades its database first) and print its URL."""
        from ..dashboard.server import serve as do_serve

        def ready(url: str) -> None:
            sys.stdout.write(url + "\n")
            sys.stdout.flush()
            output.info(f"dashboard at {url} (Ctrl-C to stop)")

        do_serve(
            db,
            host=host,
            port=port,
            workers=workers,
            max_body=max_body,
            rate_limit=rate_limit,
            read_rate_limit=read_rate_limit,
            public_url=public_url,
            access_log=access_log,
            on_ready=ready,
            allow_unsigned=allow_unsigned,
            reproduce_queue=reproduce_queue,
            trusted_proxies=trusted_proxy,
            verified_by=verified_by,
        )

    @group.command()
    def worker(
        db: str | None = typer.Option(
            None,
            "--db",
            help="The pool's way: the dashboard's PostgreSQL URL, postgresql+psycopg://USER@HOST/DB (the queue "
            "lives there).",
        ),
        url: str | None = typer.Option(
            None,
            "--url",
            help="A volunteer's way: the dashboard's URL; jobs are leased over HTTP with --token, no database "
            "access (docs/fleet.md, Lend your machine).",
        ),
        token: str | None = typer.Option(
            None, "--token", help="With --url: your dashboard token (`cotk-repro dashboard add-user`)."
        ),
        key: Path = typer.Option(
            ...,
            "--key",
            metavar="PRIVATE_KEY",
            help="The SSH private key (its .pub beside it) every verdict is signed with: the pool's, registered "
            "with `dashboard add-user NAME --ssh-key KEY.pub`, or a volunteer's, proven with `cotk-repro keys add`.",
        ),
        once: bool = typer.Option(
            False, "--once", help="With --url: take at most one lease, then exit (0 also when none is offered)."
        ),
        concurrency: int = typer.Option(
            1, "--concurrency", min=1, max=64, help="Reproductions run at once by this worker."
        ),
        base_image: str | None = typer.Option(
            None,
            "--base-image",
            help="Docker base image (default: "
            "COTK_REPRO_BASE_IMAGE, else the project's or the recorded "
            "python:X.Y-slim).",
        ),
        timeout: float | None = typer.Option(
            None,
            "--timeout",
            min=1.0,
            help="Wall-time limit in seconds of each "
            "step that runs a record's code, as `reproduce --timeout` (default: "
            "the project's config, else 3600).",
        ),
        max_attempts: int = typer.Option(
            3, "--max-attempts", min=1, max=20, help="Runs of a job that could not run before it is marked failed."
        ),
        stalled_after: float = typer.Option(
            30.0,
            "--stalled-after",
            min=2.0,
            help="Seconds without a heartbeat after which a worker's jobs go back on the queue.",
        ),
        graceful_timeout: float | None = typer.Option(
            None,
            "--graceful-timeout",
            min=0.0,
            help="On SIGTERM, seconds to let running jobs finish before abandoning them (default: wait for them).",
        ),
    ) -> None:
        """Drain the reproduction queue: reproduce each record with the Docker runtime, sign, attach (--db), or
        lend this machine to a dashboard over HTTP (--url, --token).

        Runs until SIGTERM or Ctrl-C (the running jobs finish first). Docker only: never a host runtime.
        """
        import logging

        from ..errors import CotkError

        if (db is None) == (url is None):
            raise CotkError(
                "give the dashboard's database (--db, the pool) or its URL (--url, a volunteer), one of them"
            )
        if url is None and (token is not None or once):
            raise CotkError("--token and --once go with --url (a volunteer); the pool (--db) reads the queue itself")
        if url is not None and not token:
            raise CotkError("--url needs --token: your dashboard token, from its admin (`dashboard add-user`)")
        logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
        if url is not None:
            from ..dashboard.volunteer import run_volunteer

            logging.getLogger("cotk_repro.dashboard.volunteer").setLevel(logging.INFO)  # one line per lease
            run_volunteer(
                url,
                token or "",
                key,
                concurrency=concurrency,
                once=once,
                base_image=base_image,
                timeout=timeout,
                on_ready=lambda line: output.info(line),
            )
            return
        from ..dashboard.worker import run_worker

        logging.getLogger("cotk_repro.dashboard.worker").setLevel(logging.INFO)  # one line per job
        run_worker(
            db or "",
            key,
            concurrency=concurrency,
            base_image=base_image,
            timeout=timeout,
            max_attempts=max_attempts,
            stalled_after=stalled_after,
            graceful_timeout=graceful_timeout,
            on_ready=lambda line: output.info(line),
        )

    @group.command("add-user")
    def add_user(
        name: str = typer.Argument(..., help="User name (letters, digits, '.', '_', '-')."),
        db: str | None = typer.Option(None, "--db", help=DB_HELP),
        ssh_key: list[Path] = typer.Option(
            [],
            "--ssh-key",
            metavar="FILE.pub",
            help="Register this SSH public key "
            "for the user on your word as the administrator (repeatable; no proof "
            "of possession is asked: vouch only for keys you got from the user "
            "themself): records and reproductions it signs are theirs. Users "
            "register their own keys with `cotk-repro keys add`, which proves "
            "they hold them.",
        ),
    ) -> None:
        """Create a user (or give an existing one another token) and print the token once.

        Only a hash of the token is stored: keep it, it cannot be shown again. --ssh-key is the
        administrator's vouching path: the key counts for the user without a proof of possession.
        """
        from ..dashboard.auth import add_user as do_add
        from ..dashboard.db import open_database

        keys = [_read_pub(p) for p in ssh_key]
        database = open_database(db)
        token, created = do_add(database, name)
        _add_keys(database, name, keys)
        output.info(
            f"{'created user' if created else 'new token for the existing user'} {name} on "
            f"{database.safe_url()}; this token is shown only once:"
        )
        sys.stdout.write(token + "\n")

    @group.command("add-key")
    def add_key(
        name: str = typer.Argument(..., help="An existing user."),
        ssh_key: list[Path] = typer.Argument(..., metavar="FILE.pub", help="SSH public key file(s)."),
        db: str | None = typer.Option(None, "--db", help=DB_HELP),
    ) -> None:
        """Register SSH public keys for a user on your word as the administrator (no proof of possession asked).

        Users register their own keys with `cotk-repro keys add` (a signed challenge proves they hold them).
        A key stored unproven before proofs were asked signs nothing; this vouches for it again.
        """
        from ..dashboard.db import open_database

        keys = [_read_pub(p) for p in ssh_key]
        _add_keys(open_database(db), name, keys)

    @group.command("revoke-key")
    def revoke_key(
        name: str = typer.Argument(..., help="The key's user."),
        fingerprint: str = typer.Argument(..., help="The key's fingerprint, SHA256:... (see `dashboard keys NAME`)."),
        db: str | None = typer.Option(None, "--db", help=DB_HELP),
    ) -> None:
        """Revoke a user's SSH key: uploads it signs are refused from now on (403)."""
        from ..dashboard.db import open_database
        from ..dashboard.identity import revoke_key as do_revoke

        do_revoke(open_database(db), name, fingerprint)
        output.info(f"revoked the key {fingerprint} of {name}")

    @group.command("keys")
    def keys(
        name: str = typer.Argument(..., help="User whose keys to list."),
        db: str | None = typer.Option(None, "--db", help=DB_HELP),
        json_out: bool = typer.Option(False, "--json", help="Print the keys as JSON on stdout."),
    ) -> None:
        """List a user's SSH keys with their fingerprints."""
        from ..dashboard.db import open_database
        from ..dashboard.identity import list_keys

        rows = list_keys(open_database(db), name)
        if json_out:
            output.print_json(rows)
            return
        output.console.print(
            output.table(
                f"SSH keys of {name}",
                ["fingerprint", "type", "comment", "added", "revoked"],
                [[k["fingerprint"], k["type"], k["comment"], k["created_at"], k["revoked_at"] or ""] for k in rows],
            )
        )

    @group.command("revoke-token")
    def revoke_token(
        name: str = typer.Argument(..., help="User whose tokens to revoke."),
        db: str | None = typer.Option(None, "--db", help=DB_HELP),
    ) -> None:
        """Revoke every token of a user (their records and reproductions stay)."""
        from ..dashboard.auth import revoke_token as do_revoke
        from ..dashboard.db import open_database

        n = do_revoke(open_database(db), name)
        output.info(f"revoked {n} token{'s' if n != 1 else ''} of {name}")

    @group.command("users")
    def users(
        db: str | None = typer.Option(None, "--db", help=DB_HELP),
        json_out: bool = typer.Option(False, "--json", help="Print the users as JSON on stdout."),
    ) -> None:
        """List the users and how many active tokens each holds."""
        from ..dashboard.auth import list_users
        from ..dashboard.db import open_database

        rows = list_users(open_database(db))
        if json_out:
            output.print_json(rows)
            return
        output.console.print(
            output.table(
                "users",
                ["name", "active tokens", "created"],
                [[u["name"], u["active_tokens"], u["created_at"]] for u in rows],
            )
        )

    @group.command("migrate")
    def migrate(db: str | None = typer.Option(None, "--db", help=DB_HELP)) -> None:
        """Create or upgrade the database schema (alembic upgrade head); serve does this too."""
        from ..dashboard.db import open_database

        database = open_database(db)
        output.info(f"{database.safe_url()} is at schema revision {database.current_revision()}")
