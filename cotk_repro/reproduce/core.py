"""Reproduce a published record: resolve, fetch, rebuild, rerun, diff, verdict.

Steps (each timed, see ``Outcome.steps``): clone (ls-remote, records ref, the
commit), wheel download, image build / venv build (both cached), run. The verdict is
the reproduction verdict JSON of the contract; exit status 0 reproduced, 1 not
reproduced, 2 could not run.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._version import __version__
from ..errors import EXIT_ERROR, EXIT_NEGATIVE, EXIT_OK, CotkError
from ..records import REPRODUCTION_SCHEMA, RecordView, short_id
from ..records.diffing import MetricVerdict, compare_results, environment_differences, overall
from ..records.tolerances import ToleranceRules
from . import ReproduceError
from .job import Job, Steps
from .lock import validate_lock, validate_python
from .paths import check_command


@dataclass
class ReproduceOptions:
    """The user's choices for one reproduce: record, runtime, image, tolerances, limits, submit."""

    record: str | None = None
    #: None: the project's ``reproduce.runtime`` when it keeps the code off this host, else docker
    runtime: str | None = None
    base_image: str | None = None
    #: --python PATH: the venv runtime's interpreter (None: pythonX.Y of the record's Python on PATH)
    python: str | None = None
    rtol: float | None = None
    atol: float | None = None
    #: --widen-tolerance: judge with rtol/atol even where wider than a metric declares (records it as widened)
    widen_tolerance: bool = False
    #: the reproducer's limits (flags); None: the user config's ``reproduce`` table, else the default
    timeout: float | None = None
    memory: str | None = None
    cpus: float | None = None
    disk: str | None = None
    #: use the base image the reproduced project's config names (else only the reproducer's choice)
    allow_project_image: bool | None = None
    keep: bool = False
    #: how many reproduction images (docker) to keep after the verdict, least recently used removed first;
    #: None: the user config's ``reproduce.image_cache``, else 0 (this reproduction's image is removed too)
    image_cache: int | None = None
    submit: bool = False
    dashboard: str | None = None
    #: reproduce a record that is unsigned or whose signature does not verify (otherwise: could not run)
    allow_unsigned: bool = False
    #: --trust-remote-code: a host runtime (venv, local) may run the record's code (and build its packages) here
    trust_remote_code: bool = False
    #: asks the user on a terminal (see :class:`Consent`); None: no terminal, so no consent without the flag
    confirm: Callable[[Consent], bool] | None = None


@dataclass
class Consent:
    """What the user is asked before a host runtime runs somebody else's code."""

    runtime: str
    repository: str
    commit: str
    user: str
    description: str

    def question(self) -> str:
        return (
            f"Run the code of {self.repository} at commit {self.commit[:12]} on this host as user {self.user} "
            f"({self.description})?"
        )


@dataclass
class Outcome:
    """The result of a reproduce: verdict document, exit code, per-metric rows, steps and warnings."""

    verdict: dict[str, Any]
    exit_code: int
    rows: list[MetricVerdict] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    #: warnings said before the verdict, as soon as they are known (code about to run on this host, a record let
    #: through unsigned or unverified): ``warnings`` come after it
    alerts: list[str] = field(default_factory=list)
    error: CotkError | None = None
    workdir: Path | None = None
    submission: dict[str, Any] | None = None
    record: dict[str, Any] | None = None


def empty_verdict(runtime: str) -> dict[str, Any]:
    """Return a `could not run` reproduction verdict document for `runtime`, to be filled in."""
    return {
        "schema": REPRODUCTION_SCHEMA,
        "schema_version": 1,
        "record_id": None,
        "verdict": "could not run",
        "runtime": runtime,
        "metrics": [],
        "tolerance_widened": False,
        "environment_differences": [],
        "rerun": {"results": {}, "python": None, "started_at": None, "duration_s": None},
        "error": None,
        "record_signature": None,
        "cotk_repro_version": __version__,
        "limits": None,
    }


def _as_sigint(signum, frame):  # SIGTERM, SIGHUP -> the same clean-up path as Ctrl-C
    raise KeyboardInterrupt


#: the signals that end a reproduce the way Ctrl-C (SIGINT, Python's KeyboardInterrupt) does: the container,
#: its volume and the work folder are removed
CLEANUP_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n))


def _install_handlers() -> dict[int, Any]:
    if threading.current_thread() is not threading.main_thread():
        return {}
    old = {}
    for sig in CLEANUP_SIGNALS:
        if sig != signal.SIGTERM and signal.getsignal(sig) is signal.SIG_IGN:
            continue  # `nohup cotk-repro reproduce ...`: the user asked to outlive the terminal
        try:
            old[sig] = signal.signal(sig, _as_sigint)
        except (ValueError, OSError):  # pragma: no cover - not settable here
            continue
    return old


def choose_base_image(
    opts: ReproduceOptions, user: dict[str, Any], project_image: str | None, outcome: Outcome
) -> str | None:
    """The base image: ``--base-image``, else the project's (only when the reproducer allows it: the flag
    ``--allow-project-image`` or ``reproduce.allow_project_image`` in the user config), else the user config's
    ``reproduce.base_image``, else ``COTK_REPRO_BASE_IMAGE``; None: the runtime's default for the recorded Python."""
    allowed = (
        opts.allow_project_image if opts.allow_project_image is not None else bool(user.get("allow_project_image"))
    )
    chosen: str | None
    if opts.base_image:
        chosen = opts.base_image
    elif project_image and allowed:
        outcome.warnings.append(
            f"the base image {project_image[:120]} named by the project's config "
            "(reproduce.base_image) is used, as you allowed (--allow-project-image)"
        )
        return project_image
    else:
        chosen = user.get("base_image") or os.environ.get("COTK_REPRO_BASE_IMAGE") or None
    if project_image and project_image != chosen:
        why = "--base-image wins over it" if allowed else "--allow-project-image uses it"
        outcome.notices.append(
            f"the project's config names the base image {project_image[:120]}; it is not used ({why})"
        )
    return chosen


def _fetch(source_text, workdir: Path, wanted: str | None, steps: Steps):
    from .fetch import RemoteRepo, select_record
    from .source import Source, resolve

    shown = source_text.text if isinstance(source_text, Source) else source_text
    with steps.step("clone", f"fetching the records of {shown}"):
        source = source_text if isinstance(source_text, Source) else resolve(source_text)
        if source.git_url is None:  # resolve() and source_for_record() always name one
            raise ReproduceError(f"{shown} names no git location to fetch the code from")
        repo = RemoteRepo(source.git_url, source.text, workdir, user_typed=source.user_typed)
        repo.init()
        if source.record is not None:
            record = source.record
            rid = RecordView.of(record).id or ""
            if wanted and not rid.removeprefix("sha256:").startswith(wanted.removeprefix("sha256:").lower()):
                raise ReproduceError(
                    f"--record {wanted} does not match the record of the dashboard URL ({short_id(rid)})",
                    step="select record",
                )
        else:
            record = select_record(_records_at(source, repo), wanted, source.text)
        view = RecordView.of(record)  # validated: every field below is there and of its type
        if not view.ok:
            raise ReproduceError(
                f"record {short_id(view.id or '')} is marked {view.status}; there is no successful result to reproduce",
                step="select record",
            )
        repo.fetch_commit(view.code.commit or "", view.id or "")
    return source, repo, record


def _records_at(source, repo) -> list[dict[str, Any]]:
    """The records on SOURCE's records ref; for a local checkout that has none, its own unpublished records
    (``.cotk-repro/runs``, each checked against its id), so that ``reproduce ./`` right after ``run`` works."""
    if source.kind == "path" and repo.find_records_ref() is None:
        from ..records import RunStore, validate_record

        local = []
        for record in RunStore(Path(source.git_url), trusted_only=False).all():  # a stranger's, validated
            try:
                local.append(validate_record(record))
            except CotkError:
                continue  # a damaged local record is not a candidate
        if local:
            source.local_records = True
            return local
    return repo.fetch_records()


def list_records(source_text: str, skipped: list[tuple[str, str]] | None = None) -> list[dict[str, Any]]:
    """Summaries of the records published at SOURCE, newest first; entries of the records ref that could not
    be read (a gitlink, a huge blob) go to ``skipped`` as ``(path, sentence)``."""
    from .fetch import RemoteRepo, summaries
    from .source import resolve

    workdir = Path(tempfile.mkdtemp(prefix="cotk-repro-list-"))
    try:
        source = resolve(source_text)
        if source.record is not None:
            return summaries([source.record])
        if source.git_url is None:  # resolve() always names one
            raise ReproduceError(f"{source_text} names no git location to list records from")
        repo = RemoteRepo(source.git_url, source.text, workdir, user_typed=source.user_typed)
        repo.init()
        found = summaries(_records_at(source, repo))
        if skipped is not None:
            skipped.extend(repo.skipped)
        return found
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def reproduce(
    source_text,
    opts: ReproduceOptions | None = None,
    *,
    on_status: Callable[[str], None] | None = None,
    progress: Callable[[str], Any] | None = None,
) -> Outcome:
    """Fetch a published record's code, rerun it in a runtime and compare the results with the record.

    ``source_text``: what the user typed as SOURCE, or a resolved :class:`.source.Source` (a record in hand)."""
    from ..core.config import load_config
    from ..plugins import get_plugins

    opts = opts or ReproduceOptions()
    on_status = on_status or (lambda _m: None)
    steps = Steps(progress, on_status)
    runtime_name = opts.runtime or DEFAULT_RUNTIME
    verdict = empty_verdict(runtime_name)
    outcome = Outcome(verdict=verdict, exit_code=EXIT_ERROR, steps=steps.items)
    workdir = Path(tempfile.mkdtemp(prefix="cotk-repro-reproduce-"))
    outcome.workdir = workdir
    old_handlers = _install_handlers()
    source = None
    config = None
    runtime = None
    user: dict[str, Any] = {}
    try:
        from ..core import interrupts, userconfig
        from .gc import mark_workdir

        if interrupts.take_swallowed():  # a Ctrl-C that Python swallowed while the command was imported
            raise KeyboardInterrupt
        from .limits import apply_project, reproducer_limits

        mark_workdir(workdir)
        user = userconfig.reproduce_settings()
        limits = reproducer_limits(
            {"timeout": opts.timeout, "memory": opts.memory, "cpus": opts.cpus, "disk": opts.disk},
            user,
            str(userconfig.config_path()),
        )
        verdict["limits"] = limits.as_dict()
        from .source import Source, resolve

        if not isinstance(source_text, Source):  # a SOURCE that names nothing is said before anything else
            try:
                source_text = resolve(source_text, allow_unsigned=opts.allow_unsigned)
            except ReproduceError as exc:
                exc.step = exc.step or "source"
                raise
        if opts.python is not None and runtime_name != "venv":
            raise ReproduceError(
                f"--python applies to --runtime venv only (this is --runtime {runtime_name}); "
                "the docker runtime takes the Python of its base image (--base-image)",
                step="runtime",
            )
        runtime = get_plugins().build("runtime", runtime_name)
        if getattr(runtime, "on_host", False):
            outcome.alerts.append(f"runtime {runtime_name}: the entry runs in {runtime.description}")
            if not opts.trust_remote_code and opts.confirm is None:
                raise untrusted(runtime_name)
        if hasattr(runtime, "connect"):  # no engine: say so before cloning anything
            with steps.step("docker", "connecting to the Docker engine"):
                runtime.connect()
        _collect_expired(runtime, outcome)
        source, repo, record = _fetch(source_text, workdir, opts.record, steps)
        outcome.record = record
        view = RecordView.of(record)
        commit = view.code.commit or ""
        verdict["record_id"] = view.id
        verdict["record_signature"] = _check_signature(repo, source, record, opts, outcome)
        code = workdir / "context" / "code"
        with steps.step("checkout", f"checking out {commit[:12]}"):
            repo.export(commit, code, limit=limits.disk_bytes)  # the checkout is part of what the disk limit bounds
            tree = repo.tree_of(commit)
            check_command(code, view.command.recorded)
            packages = validate_lock(view.environment.packages_recorded)
            validate_python(view.environment.recorded)
        try:
            config = load_config(code)
        except CotkError as exc:
            outcome.warnings.append(f"ignoring the project's config: {exc.message}")
            config = load_config(workdir)  # defaults
        if opts.runtime is None:
            runtime_name, runtime = _configured_runtime(config, runtime_name, runtime, outcome, steps)
            verdict["runtime"] = runtime_name
        outcome.warnings.extend(config_warnings(config, runtime))
        if getattr(runtime, "on_host", False) and not opts.trust_remote_code:
            ask(opts.confirm, Consent(runtime_name, source.display, commit, host_user(), runtime.description))
        project = config.data.get("reproduce", {}) or {}
        limits = apply_project(limits, project)
        verdict["limits"] = limits.as_dict()
        tolerances = ToleranceRules.of_config(config, opts.rtol, opts.atol, opts.widen_tolerance)
        tolerances.check(view.recorded_results())  # a project asking for more than its metrics declare: refused now
        declared = tolerances.prefetch(view.recorded_results())  # the metrics' classes load while the entry runs
        config_base = project.get("base_image") or None
        job = Job(
            record=record,
            workdir=workdir,
            code=code,
            tree=tree,
            base_image=choose_base_image(opts, user, config_base, outcome),
            timeout=limits.timeout,
            memory=limits.memory,
            cpus=limits.cpus,
            disk=limits.disk,
            steps=steps,
            packages=packages,
            trust_host_build=opts.trust_remote_code,
            config_base_image=config_base,
            python=opts.python,
            on_status=on_status,
            warnings=outcome.warnings,
        )
        env_info = runtime.prepare(job)
        with steps.step("run", f"running {view.command.entry} ({runtime_name})"):
            rerun = runtime.run(job)
        declared.join()
        rows = compare_results(view.recorded_results(), rerun.results, tolerances)
        outcome.rows = rows
        verdict["verdict"] = overall(rows)
        verdict["metrics"] = [r.as_dict() for r in rows]
        verdict["tolerance_widened"] = any(r.widened for r in rows)
        verdict["environment_differences"] = environment_differences(
            view.environment.recorded,
            {
                "python": {"version": rerun.python or (env_info.get("python") or {}).get("version")},
                "packages": rerun.packages,
            },
        )
        verdict["rerun"] = {
            "results": rerun.results,
            "python": rerun.python,
            "started_at": rerun.started_at,
            "duration_s": rerun.duration_s,
        }
        outcome.exit_code = EXIT_OK if verdict["verdict"] == "reproduced" else EXIT_NEGATIVE
        if runtime_name == "local" and verdict["environment_differences"]:
            n = len(verdict["environment_differences"])
            outcome.warnings.append(
                f"the current environment differs from the record in {n} place(s) "
                "(see environment differences); --runtime docker or venv rebuilds it"
            )
    except CotkError as exc:
        verdict["verdict"] = "could not run"
        verdict["error"] = exc.message
        outcome.error = exc
        outcome.exit_code = EXIT_ERROR
        if not opts.keep:
            _keep_logs(workdir, exc, outcome)
    finally:
        for sig, handler in old_handlers.items():
            signal.signal(sig, handler)
        if runtime is not None and hasattr(runtime, "finish"):
            from .limits import image_cache

            runtime.finish(image_cache(opts.image_cache, user))
        if not opts.keep:
            shutil.rmtree(workdir, ignore_errors=True)
            outcome.workdir = None
        else:
            from .gc import unmark_workdir

            unmark_workdir(workdir)  # kept on purpose: `gc` leaves it alone
    if opts.submit and verdict["record_id"]:
        outcome.submission = submit(verdict, opts, config, outcome)
    return outcome


def _collect_expired(runtime, outcome: Outcome) -> None:
    """Remove what earlier reproductions left past their deadline (their reproducer died): containers,
    their scratch volumes, work folders. Best effort: a failure here never stops this reproduction."""
    from .gc import collect

    try:
        report = collect(getattr(runtime, "client", None))
    except Exception:
        return
    if report.removed:
        outcome.notices.append(f"removed {report.describe()} left by earlier reproductions past their deadline")


def untrusted(runtime_name: str) -> ReproduceError:
    """No --trust-remote-code and no terminal to ask on: a host runtime runs nothing."""
    return ReproduceError(
        f"the {runtime_name} runtime runs the record's code on this host, and nothing confirmed "
        "that you trust it; nothing was run",
        step="consent",
        hint="pass --trust-remote-code to run it on this host, or use --runtime docker "
        "(a container without network; needs no flag)",
    )


def ask(confirm: Callable[[Consent], bool] | None, consent: Consent) -> None:
    """The user's yes on a terminal, or a ReproduceError (nothing of the record has run yet)."""
    if confirm is None:
        raise untrusted(consent.runtime)
    if not confirm(consent):
        raise ReproduceError(
            f"not confirmed: the code of {consent.repository} was not run",
            step="consent",
            hint="--runtime docker runs it in a container without network",
        )


def host_user() -> str:
    """The user the code of a host runtime runs as: ``name (uid N)``."""
    import getpass

    try:
        name = getpass.getuser()
    except (KeyError, OSError):
        name = "?"
    return f"{name} (uid {os.getuid()})" if hasattr(os, "getuid") else name


DEFAULT_RUNTIME = "docker"
#: failed reproductions whose logs are kept under the cache dir
KEPT_LOGS = 20


def _configured_runtime(config, name: str, runtime, outcome: Outcome, steps: Steps):
    """The runtime the reproduced project's ``reproduce.runtime`` names, where that is safe.

    The config is somebody else's: it may pick a runtime that isolates the code (a plugin's
    container runtime, say), never one that runs it on this host; that takes ``--runtime``.
    """
    from ..plugins import get_plugins

    wanted = config.get("reproduce", "runtime") or name
    if wanted == name:
        return name, runtime
    registry = get_plugins().registry("runtime")
    if wanted not in registry:
        outcome.warnings.append(
            f"the project's config names the runtime {wanted!r}, which is not installed here; using {name}"
        )
        return name, runtime
    other = get_plugins().build("runtime", wanted)
    if getattr(other, "on_host", False):
        outcome.warnings.append(
            f"the project's config asks for the {wanted} runtime, which runs its code on this "
            f"host; that takes an explicit --runtime {wanted}, so {name} is used"
        )
        return name, runtime
    if hasattr(other, "connect"):
        with steps.step(wanted, f"connecting to the {wanted} runtime"):
            other.connect()
    return wanted, other


def config_warnings(config, runtime) -> list[str]:
    """What the reproduced project's config asks for that this reproduction will not grant."""
    if config.get("reproduce", "network") and not getattr(runtime, "on_host", False):
        return [
            (
                "the project's config says its entry needs the network (reproduce.network = true), but "
                "reproductions run without network: a failure may come from that"
            )
        ]
    return []


def _check_signature(repo, source, record, opts: ReproduceOptions, outcome: Outcome) -> dict[str, Any]:
    """Who signed the record and whether the signature holds (none or a bad one stops here unless --allow-unsigned)."""
    from ..core.signing import SigningError
    from ..remote.signatures import check_before_reproduce
    from .fetch import LOCAL_RECORDS

    if source.local_records:  # the user's own checkout: records are signed when they are published
        outcome.notices.append(
            f"record {short_id(RecordView.of(record).id or '')} is an unpublished local record of {source.text}: "
            "unsigned (records are signed when published)"
        )
        return {"status": "unsigned", "signer": None, "fingerprint": None}
    git_dir = repo.git_dir
    if source.record is not None:  # the record came from a dashboard: its signature is on the git remote's ref
        try:
            repo.fetch_records()
        except CotkError:
            git_dir = None
    try:
        row, line = check_before_reproduce(git_dir, LOCAL_RECORDS, record, allow_unsigned=opts.allow_unsigned)
    except SigningError as exc:
        raise ReproduceError(exc.message, hint=exc.hint, step="signature") from None
    if source.publisher is not None and row["fingerprint"] != source.publisher:
        # the git URL came from a publication signed by one key; the record on that remote is signed by another
        raise ReproduceError(
            f"record {short_id(record['id'])} on {source.git_url} is signed by key "
            f"{row['fingerprint'] or 'none'}, not by the key that signed its publication "
            f"({source.publisher}), so it is not run",
            step="signature",
        )
    # a valid signature by an allowed signer is news; a bad, unsigned or unknown one (let through) a warning
    (outcome.notices if row["status"] == "valid" else outcome.alerts).append(line)
    return {k: row[k] for k in ("status", "signer", "fingerprint")}


def _keep_logs(workdir: Path, exc: CotkError, outcome: Outcome) -> None:
    """Copy a failed reproduction's logs out of the work folder (about to be deleted), and point the
    error's message and hint at the copy, so that "full log: ..." names a file that exists."""
    from ..core.userconfig import cache_dir

    logs = workdir / "logs"
    if not logs.is_dir() or not any(logs.iterdir()):
        return
    root = cache_dir() / "reproduce-logs"
    name = time.strftime("%Y%m%d-%H%M%S") + "-" + (short_id(outcome.verdict["record_id"] or "") or "unknown")
    dest = root / name
    try:
        shutil.copytree(logs, dest, dirs_exist_ok=True)
        for old in sorted(root.iterdir())[:-KEPT_LOGS]:
            shutil.rmtree(old, ignore_errors=True)
    except OSError:
        return
    exc.message = exc.message.replace(str(logs), str(dest))
    if exc.hint:
        exc.hint = exc.hint.replace(str(logs), str(dest))
    outcome.verdict["error"] = exc.message
    outcome.notices.append(f"the logs of this attempt are kept in {dest}")


def submit_dashboard(opts: ReproduceOptions, config, outcome: Outcome) -> str | None:
    """The dashboard --submit talks to: only one the USER configured (--dashboard, COTK_REPRO_DASHBOARD_URL,
    `cotk-repro login`); never a URL from the reproduced project's files, which may be shown, not used."""
    from ..core import userconfig

    url = opts.dashboard or os.environ.get("COTK_REPRO_DASHBOARD_URL") or userconfig.default_dashboard()
    project_url = config.get("dashboard", "url") if config is not None else None
    if isinstance(project_url, str) and project_url and project_url.rstrip("/") != (url or "").strip().rstrip("/"):
        outcome.notices.append(
            f"the reproduced project names the dashboard {project_url}; --submit does not use "
            "it (pass --dashboard URL to choose one yourself)"
        )
    return url or None


def submit(verdict: dict[str, Any], opts: ReproduceOptions, config, outcome: Outcome) -> dict[str, Any] | None:
    """POST the signed verdict to the user's dashboard with the user's token; a failure is a warning (the verdict
    stands)."""
    from ..core import userconfig
    from ..remote.dashboard import DashboardClient, DashboardError

    url = submit_dashboard(opts, config, outcome)
    if not url:
        outcome.warnings.append("--submit: no dashboard to submit to (pass --dashboard URL or run `cotk-repro login`)")
        return None
    try:
        from ..core.signing import sign_for_submit

        url = userconfig.normalize_url(url)
        signature = sign_for_submit(verdict)
        if signature is None:
            outcome.warnings.append("--submit: no SSH key to sign the reproduction with (see `cotk-repro keys`)")
        answer = DashboardClient(url, userconfig.dashboard_token(url)).submit_reproduction(
            verdict["record_id"], verdict, signature=signature
        )
    except (DashboardError, CotkError) as exc:
        outcome.warnings.append(f"--submit: {exc.message}" + (f" ({exc.hint})" if exc.hint else ""))
        return None
    return {"dashboard": url, **(answer if isinstance(answer, dict) else {})}
