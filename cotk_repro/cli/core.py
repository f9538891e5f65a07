"""Core commands: init, run, runs, show, diff, plugins. Parsing and rendering only."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer

from ..errors import EXIT_NEGATIVE, CotkError
from . import output
from .typerapp import app


def _store_here():
    from ..capture.git import repo_root
    from ..records import RunStore

    return RunStore(repo_root(Path.cwd()))


def _results_rows(results: dict[str, Any]) -> list[list[Any]]:
    return [
        [name, output.fmt_value(r.get("value")), output.fmt_hash(r.get("hash")), r.get("signature") or ""]
        for name, r in results.items()
    ]


@app.command()
def init(
    directory: Path = typer.Argument(Path("."), help="Folder to scaffold (created when missing)."),
    task: str | None = typer.Option(
        None,
        "--task",
        help="Task name, used to file results on the dashboard "
        "(default: the template's task, else language-generation).",
    ),
    template: str = typer.Option("minimal", "--template", "-t", help="Project template (--list-templates shows them)."),
    force: bool = typer.Option(False, "--force", help="Overwrite files that already exist."),
    list_templates: bool = typer.Option(False, "--list-templates", help="List the templates and exit."),
    json_out: bool = typer.Option(False, "--json", help="With --list-templates: JSON on stdout."),
    ci: str | None = typer.Option(
        None,
        "--ci",
        metavar="PROVIDER",
        help="Also write a CI workflow that reproduces the latest published record on every push: github.",
    ),
) -> None:
    """Scaffold a project: cotk-repro.toml, an entry script, .gitignore, and `git init` when needed."""
    from ..scaffold import registered_templates, scaffold

    if list_templates:
        rows = [c.obj.summary(c.plugin) for _, c in sorted(registered_templates().items())]
        if json_out:
            output.print_json(rows)
            return
        output.console.print(
            output.table(
                "templates",
                ["name", "task", "dataset", "metrics", "dependencies"],
                [
                    [
                        r["name"],
                        r["task"] or "(--task)",
                        r["dataset"],
                        ", ".join(r["metrics"]),
                        ", ".join(r["dependencies"]) or "-",
                    ]
                    for r in rows
                ],
            )
        )
        return
    if json_out:
        raise CotkError("--json only goes with --list-templates")
    if ci is not None:
        from ..ci_workflow import PROVIDERS

        if ci not in PROVIDERS:
            raise CotkError(f"unknown CI provider {ci!r}; known: {', '.join(PROVIDERS)}")
    written = scaffold(directory, task=task, template=template, force=force)
    if ci is not None:
        from ..ci_workflow import write_workflow

        written.append(write_workflow(directory, ci, force=force))
    for path in written:
        output.info(f"wrote {os.path.relpath(path)}")
    output.info("next: git add -A && git commit -m start && cotk-repro run")
    output.info("records are signed with your SSH key when published; `cotk-repro keys` shows which key")


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": False})
def run(
    entry: str | None = typer.Option(
        None, "--entry", help="Entry script (default: run.entry in cotk-repro.toml, else main.py)."
    ),
    result: str | None = typer.Option(None, "--result", help="Result file the entry writes (default: result.json)."),
    allow_dirty: bool = typer.Option(
        False, "--allow-dirty", help="Run with uncommitted changes; the record is marked dirty."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Do not echo the entry's output (still logged)."),
    json_out: bool = typer.Option(False, "--json", help="Print the record as JSON on stdout."),
    args: list[str] | None = typer.Argument(None, help="Arguments for the entry, after `--`."),
) -> None:
    """Capture code and environment, run the entry script, validate its result file, write a record."""
    from ..records.runner import execute

    outcome = execute(
        entry=entry,
        args=list(args or []),
        result=result,
        allow_dirty=allow_dirty,
        echo=False if quiet else ("stderr" if json_out else True),
        meanwhile=None if json_out else output.prepare_tables,
    )
    record = outcome.record
    from ..records.view import RecordView

    view = RecordView.of(record)
    if outcome.error is not None:
        output.info(f"recorded as {view.status}: {view.id}")
        raise outcome.error
    if json_out:
        output.print_json(record)
        return
    output.console.print(f"record {view.id}")
    output.console.print(
        output.table("results", ["metric", "value", "hash", "signature"], _results_rows(view.recorded_results()))
    )
    if view.code.dirty:
        output.warn("the work tree was dirty: this record is marked dirty and cannot be reproduced exactly")


@app.command()
def runs(
    json_out: bool = typer.Option(False, "--json", help="Machine-readable list on stdout."),
    all_: bool = typer.Option(True, "--all/--ok-only", help="Include failed and interrupted runs."),
) -> None:
    """List the local records of this project, newest first."""
    store = _store_here()
    from ..records.view import RecordView

    records = [v for v in map(RecordView.of, store.all()) if all_ or v.ok]
    if store.ignored:
        output.warn(
            f"ignoring {len(store.ignored)} record folder(s) in {store.runs} that cotk-repro did not write on "
            "this machine (they may have come with the repository)"
        )
    if json_out:
        output.print_json(
            [
                {
                    "id": r.id,
                    "status": r.status,
                    "started_at": r.command.started_at,
                    "entry": r.command.entry,
                    "commit": r.code.commit,
                    "dirty": r.code.dirty,
                    "results": {k: v.value for k, v in r.results.items()},
                }
                for r in records
            ]
        )
        return
    if not records:
        output.info("no records yet; run `cotk-repro run`")
        return
    rows = [
        [
            (r.id or "").removeprefix("sha256:")[:12],
            r.status,
            r.command.started_at,
            r.command.entry,
            (r.code.commit or "")[:8] + (" (dirty)" if r.code.dirty else ""),
            ", ".join(f"{k}={output.fmt_value(v.value)}" for k, v in r.results.items()),
        ]
        for r in records
    ]
    output.console.print(output.table("runs", ["id", "status", "started", "entry", "commit", "results"], rows))


@app.command()
def show(
    record_id: str = typer.Argument("latest", metavar="ID", help="Record id, unique prefix, or `latest`."),
    json_out: bool = typer.Option(False, "--json", help="The whole record as JSON on stdout."),
) -> None:
    """Show one local record."""
    r = _store_here().get(record_id)
    if json_out:
        output.print_json(r)
        return
    from ..records.view import RecordView

    view = RecordView.of(r)
    code, env, cmd, project = view.code, view.environment, view.command, view.project
    lines = [
        f"id        {view.id}",
        f"status    {view.status}" + (f" ({view.error})" if view.error else ""),
        f"project   {project.name}  task={project.task or '-'}  dataset={project.dataset or '-'}",
        f"code      {code.commit} on {code.branch or '(detached)'}" + ("  DIRTY" if code.dirty else ""),
        f"remote    {code.remote_url or '-'}",
        (
            f"python    {env.python_implementation} {env.python_version} on {env.platform.get('system')}/"
            f"{env.platform.get('machine')}"
        ),
        (
            f"packages  {len(env.packages)} distributions; plugins: "
            + ", ".join(f"{p.get('name')} {p.get('version')}" for p in env.plugins)
        ),
        f"command   python {cmd.entry} {' '.join(cmd.args)}  (in {cmd.cwd}, exit {cmd.exit_status}, {cmd.duration_s} s)",
        f"started   {cmd.started_at}",
        f"docker    Dockerfile sha256 {(env.dockerfile_sha256 or '')[:16]}",
    ]
    for line in lines:
        output.console.print(output.safe(line), markup=False, soft_wrap=True)
    if view.results:
        output.console.print(
            output.table("results", ["metric", "value", "hash", "signature"], _results_rows(view.recorded_results()))
        )
    if view.data:
        output.console.print(output.table("data hash codes", ["hash", "value"], [[k, v] for k, v in view.data.items()]))


def render_verdicts(
    rows, verdict: str, title: str = "verdict", labels: tuple[str, str] = ("published", "rerun")
) -> None:
    """Print a table of per-metric verdicts (identical / within tolerance (moved by X) / differs, the values,
    the tolerance judged with, hash match) and the overall verdict."""
    from rich.markup import escape

    from ..records.tolerances import WIDEN_FLAG
    from ..records.tolerances import describe as describe_tolerance

    styles = {
        "reproduced": "green",
        "differs": "red",
        "not comparable": "yellow",
        "missing": "red",
        "unverifiable": "cyan",
        "extra": "dim",
    }
    t = output.table(title, ["metric", "verdict", *labels, "|diff|", "tolerance", "hash"], [])
    for r in rows:
        same_hash = "same" if r.a_hash and r.a_hash == r.b_hash else ("different" if r.a_hash and r.b_hash else "-")
        tolerance = describe_tolerance(r.rtol, r.atol) + (" (widened)" if r.widened else "")
        t.add_row(
            output.cell(r.metric),
            f"[{styles.get(r.verdict, '')}]{escape(r.describe())}[/]",
            output.fmt_value(r.a_value),
            output.fmt_value(r.b_value),
            output.fmt_value(r.abs_diff),
            tolerance,
            same_hash,
        )
    output.console.print(t)
    output.console.print(f"[bold]{verdict}[/bold]")
    if any(r.widened for r in rows):
        output.console.print(
            f"tolerance widened ({WIDEN_FLAG}) for: " + ", ".join(r.metric for r in rows if r.widened), markup=False
        )


def _doc_label(doc: dict, given: str) -> str:
    """A record by its short id (``3f2a9c1b7d4e``), anything else as the user named it."""
    from ..records.view import RecordView

    rid = RecordView.of(doc).id
    return rid.removeprefix("sha256:")[:12] if rid is not None else given


@app.command()
def diff(
    a: str = typer.Argument(
        ..., metavar="A", help="Reference: record id/prefix/`latest`, a record or result JSON file, or a URL."
    ),
    b: str = typer.Argument(..., metavar="B", help="Candidate, same forms as A."),
    rtol: float | None = typer.Option(
        None,
        "--rtol",
        help="Relative tolerance for every metric; it only tightens each metric's declared one "
        "(`cotk-repro metrics`) unless --widen-tolerance.",
    ),
    atol: float | None = typer.Option(
        None, "--atol", help="Absolute tolerance for every metric; tightens only, as --rtol."
    ),
    widen_tolerance: bool = typer.Option(
        False,
        "--widen-tolerance",
        help="Judge with --rtol/--atol as given even where wider than a metric declares (and accept a "
        "project's wider per-metric values); each such metric is marked widened.",
    ),
    json_out: bool = typer.Option(False, "--json", help="Verdicts as JSON on stdout."),
) -> None:
    """Compare two records metric by metric. Exit 1 when a metric differs, is not comparable or is missing.

    Each metric is judged with the tolerance it declares (docs/reproduce.md, "Tolerances"); the project's config
    may tighten it, only --widen-tolerance widens it.
    """
    from ..core.config import load_config
    from ..records.diffing import compare_results, environment_differences, overall
    from ..records.locate import load_document
    from ..records.tolerances import ToleranceRules, unused_flags

    try:
        store = _store_here()
        config = load_config(store.root)
    except CotkError:
        store, config = None, load_config(Path.cwd())
    doc_a = load_document(a, store)
    doc_b = load_document(b, store)
    rules = ToleranceRules.of_config(config, rtol, atol, widen_tolerance)
    rows = compare_results(doc_a["results"], doc_b["results"], rules)
    verdict = overall(rows)
    unused = unused_flags(rows, rtol, atol, widen_tolerance)
    if unused:
        output.warn(unused)
    env_diff = []
    if "environment" in doc_a and "environment" in doc_b:
        env_diff = environment_differences(doc_a["environment"], doc_b["environment"])
    if json_out:
        output.print_json(
            {
                "verdict": verdict,
                "a": doc_a.get("id"),
                "b": doc_b.get("id"),
                "metrics": [r.as_dict() for r in rows],
                "tolerance_widened": any(r.widened for r in rows),
                "environment_differences": env_diff,
            }
        )
    else:
        render_verdicts(
            rows, verdict, title=f"diff of A = {_doc_label(doc_a, a)} and B = {_doc_label(doc_b, b)}", labels=("A", "B")
        )
        if env_diff:
            shown = ", ".join(f"{d['what']} {d['a']} -> {d['b']}" for d in env_diff[:8])
            output.console.print(f"environment differs: {shown}" + (" ..." if len(env_diff) > 8 else ""), markup=False)
    if verdict != "reproduced":
        raise typer.Exit(EXIT_NEGATIVE)


@app.command("plugins")
def plugins_cmd(
    json_out: bool = typer.Option(
        False,
        "--json",
        help="A JSON list on stdout: per plugin its name, version, status, what it registers, refusals and conflicts.",
    ),
) -> None:
    """Every plugin with its version, what it registers, and whether it is broken."""
    from ..errors import PluginError
    from ..plugins import get_plugins

    p = get_plugins()
    conflicts = p.conflicts()
    infos = sorted(p.infos.values(), key=lambda i: (not i.builtin, i.name))
    if json_out:
        output.print_json([i.as_dict() for i in infos])  # a list of objects, as `metrics --json` and `runs --json`
    else:
        rows = [
            [
                i.name,
                i.version,
                "built-in" if i.builtin else "entry point",
                "; ".join(f"{k}: {', '.join(v)}" for k, v in sorted(i.registers.items())),
                "BROKEN: " + i.error if i.error else "REFUSED: " + "; ".join(i.refused) if i.refused else "ok",
            ]
            for i in infos
        ]
        output.console.print(output.table("plugins", ["plugin", "version", "source", "registers", "status"], rows))
    if conflicts:
        raise PluginError(conflicts[0] + (f" (and {len(conflicts) - 1} more)" if len(conflicts) > 1 else ""))
