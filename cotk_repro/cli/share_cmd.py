"""``cotk-repro export`` and ``cotk-repro ci``: results where researchers put them. Parsing and rendering only."""

from __future__ import annotations

from pathlib import Path

import typer

from . import output

FORMATS = ("model-index", "json")


def _load(record_ref: str) -> tuple[dict, str | None]:
    """The record a user named (local id/prefix/latest, record.json, folder or dashboard URL) and its signature."""
    from ..errors import CotkError
    from ..records.locate import load_document

    store = None
    try:
        from ..capture.git import repo_root
        from ..records import RunStore

        store = RunStore(repo_root(Path.cwd()))
    except CotkError:
        store = None
    doc = load_document(record_ref, store)
    from ..records.view import RecordView

    rid = RecordView.of(doc).id
    if not rid:
        raise CotkError(
            f"{record_ref} is a result file, not a record: export needs a record (`cotk-repro run` writes one)"
        )
    signature = None
    if store is not None:
        try:
            sig = store.resolve(rid) / "record.sig"
            signature = sig.read_text(encoding="utf-8") if sig.is_file() and not sig.is_symlink() else None
        except (CotkError, OSError):
            signature = None
    return doc, signature


def register(cli: typer.Typer) -> None:
    """Add `export` (a record's results as model-index metadata or JSON) and `ci` (write a CI workflow)."""

    @cli.command("export")
    def export(
        record: str = typer.Argument(
            "latest",
            metavar="RECORD",
            help="Record id, unique prefix or `latest`, a record.json file or folder, or a dashboard record URL.",
        ),
        fmt: str = typer.Option(
            "model-index",
            "--format",
            "-f",
            metavar="FORMAT",
            help="model-index (Hugging Face model card metadata, YAML) or json (results with hashes and signatures).",
        ),
        card: Path | None = typer.Option(
            None,
            "--card",
            metavar="README.md",
            help="With model-index: update this "
            "model card's metadata in place (created when missing) instead of "
            "printing it.",
        ),
        model_name: str | None = typer.Option(
            None,
            "--model-name",
            metavar="NAME",
            help="The model's name in the model-index (default: the card's, else the project's name).",
        ),
    ) -> None:
        """Write a record's results for other places: Hugging Face model-index metadata or JSON.

        Every model-index entry carries the metric's comparability hash (as its metric_config, and in
        metric_args with the readable signature and the record id): two numbers may be compared only when
        those hashes are equal.
        """
        from ..errors import CotkError
        from ..records import export as exp

        if fmt not in FORMATS:
            raise CotkError(f"unknown format {fmt!r}; formats: {', '.join(FORMATS)}")
        if card is not None and fmt != "model-index":
            raise CotkError("--card goes with --format model-index")
        doc, signature = _load(record)
        if fmt == "json":
            output.print_json(exp.results_document(doc, signature))
        elif card is not None:
            exp.update_card(card, doc, model_name)
            from ..records.view import RecordView

            n = len(RecordView.of(doc).results)
            output.info(f"updated the model-index of {card} ({output.plural(n, 'result')})")
        else:
            typer.echo(exp.model_index_yaml(doc, model_name), nl=False)

    ci = typer.Typer(
        help="Continuous integration: a workflow that reproduces the latest published record.", no_args_is_help=True
    )
    cli.add_typer(ci, name="ci")

    @ci.command("github")
    def ci_github(
        directory: Path = typer.Argument(Path("."), help="The project folder (its repository root)."),
        force: bool = typer.Option(False, "--force", help="Overwrite a workflow file that was edited."),
    ) -> None:
        """Write .github/workflows/cotk-repro.yml: on push and pull request, reproduce the latest published record
        with the Docker runtime; the check fails when a metric does not reproduce, and the verdict table is
        the job summary."""
        from ..ci_workflow import write_workflow

        path = write_workflow(directory, "github", force=force)
        output.info(f"wrote {path}")
