"""``cotk-repro demo``: the whole loop on one machine, with nothing to set up (docs/spec.md section 8).

1. scaffold the sample project (a bigram language model on a small corpus shipped in
   ``templates/project/demo``) in a temporary folder and commit it;
2. ``run`` it: a record with hashed perplexity, BLEU, Self-BLEU and Distinct;
3. start an embedded dashboard (SQLite) on a free port and create two users, the author
   and a reproducer, each with a throwaway SSH key made in the demo folder;
4. add the git remote (after the run: the record names none, and is not run again) — a bare repository in
   the demo folder served read-only by ``git daemon`` on a free loopback port (``git://127.0.0.1:PORT/``,
   a URL a reproducer may fetch; pushes go to the folder itself) — and ``publish`` to it and to the
   dashboard, signed by the author's key: the remote goes beside the record, signed (``publication.json``);
5. ``reproduce`` it from the git remote alone (``docker`` when an engine and a local base image with the
   record's Python minor version are there, else ``venv``; the status line says which and why) and submit the verdict, signed by the reproducer's
   key, so the record page shows "reproduced by 1".

The user's own configuration and SSH keys are never touched: the demo's dashboard tokens live
in a user-config folder inside the demo folder, its keys in ``keys/`` there. Without ssh-keygen
the demo's dashboard accepts unsigned uploads instead.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .core.git import git
from .errors import CotkError

PROJECT = "sample-lm"
OWNER = "demo"
USER = "demo"
REPRODUCER = "demo-reproducer"


@dataclass
class DemoResult:
    """What the demo made: its folders, the record, dashboard URLs, the reproduction and timings."""

    folder: Path
    project: Path
    record: dict[str, Any]
    dashboard_url: str
    record_url: str | None
    reproduction: Any  # reproduce.core.Outcome
    runtime: str
    timings: dict[str, float] = field(default_factory=dict)
    stop: Callable[[], None] | None = None


def _git(cwd: Path, *args: str) -> str:
    # a machine without a git identity still gets a commit
    env = {
        k: os.environ.get(k, v)
        for k, v in (("GIT_AUTHOR_NAME", "cotk-repro demo"), ("GIT_AUTHOR_EMAIL", "demo@cotk-repro.invalid"))
    }
    env["GIT_COMMITTER_NAME"] = os.environ.get("GIT_COMMITTER_NAME", env["GIT_AUTHOR_NAME"])
    env["GIT_COMMITTER_EMAIL"] = os.environ.get("GIT_COMMITTER_EMAIL", env["GIT_AUTHOR_EMAIL"])
    proc = git(cwd, *args, env=env, check=False)
    if proc.returncode != 0:
        message = (proc.stderr or proc.stdout).decode("utf-8", "replace").strip()
        raise CotkError(f"git {args[0]} failed in {cwd}: {message}")
    return proc.stdout.decode("utf-8", "replace").strip()


def docker_image_for(python_mm: str, base_image: str | None) -> tuple[str | None, str]:
    """``(image, why)``: a local Docker image with Python ``python_mm`` for the demo's docker step (``base_image``
    when it has that Python, else one labelled or named so, :mod:`.reproduce.base_images`), or None and why
    there is none. Nothing is pulled: the demo uses what this machine has."""
    try:
        import docker

        from .reproduce.base_images import describe_available, image_python, local_pythons

        client = docker.from_env(timeout=5)
        client.ping()
    except Exception:
        return None, "no Docker engine answers"
    try:
        said = ""
        if base_image:
            try:
                img = client.images.get(base_image)
                has = image_python(img.labels, list(img.tags or []) or [base_image])
            except Exception:
                img, has = None, None
            if img is not None and has in (None, python_mm):
                return base_image, f"base image {base_image}"
            said = (
                f"the base image {base_image} is not on this machine; "
                if img is None
                else f"the base image {base_image} has Python {has}; "
            )
        found = local_pythons(client)
    except Exception as exc:  # the engine answered the ping but not this: no docker step
        return None, f"the Docker engine failed ({type(exc).__name__})"
    if python_mm in found:
        return found[python_mm][0], f"{said}base image {found[python_mm][0]}, Python {python_mm}"
    return None, f"{said}no local Docker image has Python {python_mm}: {describe_available(found)}"


def choose_runtime(requested: str | None, base_image: str | None, python_mm: str) -> tuple[str, str | None, str]:
    """``(runtime, base image, why)``: the runtime asked for, else docker when an engine and a local image with
    the record's Python ``python_mm`` are there, else venv (with ``why`` saying what was missing)."""
    if requested:
        return requested, base_image, f"--runtime {requested}"
    image, why = docker_image_for(python_mm, base_image)
    return ("docker", image, why) if image else ("venv", None, why)


def run_demo(
    folder: Path | None = None,
    *,
    runtime: str | None = None,
    base_image: str | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    keep: bool = False,
    on_status: Callable[[str], None] = lambda _m: None,
) -> DemoResult:
    """Run the loop; the dashboard keeps serving until ``result.stop()`` is called.

    When the loop fails or is interrupted, a temporary folder it made is removed (unless ``keep``) and
    ``on_status`` says so; a folder it was given, or one kept, is named.
    """

    created = folder is None
    folder = Path(folder or tempfile.mkdtemp(prefix="cotk-repro-demo-")).resolve()
    try:
        return _loop(folder, runtime=runtime, base_image=base_image, host=host, port=port, on_status=on_status)
    except (
        BaseException
    ):  # a failure, Ctrl-C or SIGTERM (the command turns it into SystemExit): never a silent leftover
        if created and not keep:
            cleanup(folder)
            on_status(f"removed the demo folder {folder}")
        else:
            on_status(f"the demo folder is kept in {folder}")
        raise


def _loop(
    folder: Path, *, runtime: str | None, base_image: str | None, host: str, port: int, on_status: Callable[[str], None]
) -> DemoResult:
    from .core import userconfig
    from .core.signing import ENV_KEY, make_key
    from .dashboard.auth import add_user
    from .dashboard.db import open_database
    from .dashboard.identity import add_key
    from .dashboard.server import start_in_thread
    from .publish.core import publish
    from .records.runner import execute
    from .reproduce.core import ReproduceOptions, reproduce
    from .scaffold import scaffold

    timings: dict[str, float] = {}
    t_all = time.perf_counter()
    folder.mkdir(parents=True, exist_ok=True)
    project = folder / PROJECT
    bare = folder / "git" / OWNER / f"{PROJECT}.git"
    if project.exists() or bare.exists():
        raise CotkError(f"{folder} already holds a demo; give an empty or new folder")
    # the demo's token goes to a user config inside the demo folder, never the user's own
    os.environ["XDG_CONFIG_HOME"] = str(folder / "config")
    os.environ["COTK_REPRO_GIT_BASE"] = (folder / "git").as_uri() + "/"

    t = time.perf_counter()
    on_status(f"scaffolding the sample project in {project}")
    scaffold(project, task="language-generation", template="demo", name=PROJECT)
    _git(project, "add", "-A")
    _git(project, "commit", "-q", "-m", "Sample bigram language model")
    _git(project, "branch", "-M", "main")  # the same branch name whatever git's init.defaultBranch says
    timings["scaffold"] = time.perf_counter() - t

    t = time.perf_counter()
    on_status("running the sample project (cotk-repro run)")
    outcome = execute(project, echo=False)
    if outcome.error is not None:
        raise outcome.error
    record = outcome.record
    timings["run"] = time.perf_counter() - t

    # the remote comes after the run, as for a project that gets one later: publish takes it then
    _git(folder, "init", "-q", "--bare", str(bare))
    git_url, stop_git = serve_git(folder / "git")
    try:
        _git(project, "remote", "add", "origin", f"{git_url}{OWNER}/{PROJECT}.git")
        _git(project, "remote", "set-url", "--push", "origin", str(bare))  # the daemon serves reads only

        t = time.perf_counter()
        on_status("starting the embedded dashboard (SQLite)")
        db_url = f"sqlite:///{folder / 'dashboard.db'}"
        keys = {name: make_key(folder / "keys" / name, f"{name}@cotk-repro-demo") for name in (USER, REPRODUCER)}
        signed = all(keys.values())
        url, stop_dashboard = start_in_thread(db_url, host, port, allow_unsigned=not signed)
    except BaseException:
        stop_git()
        raise

    def stop() -> None:
        stop_dashboard()
        stop_git()
        # the git daemon's URL dies with it: a kept project's origin then names the bare repository itself
        with contextlib.suppress(OSError, CotkError):
            _git(project, "remote", "set-url", "origin", str(bare))

    try:
        db = open_database(db_url, migrate=False)
        tokens = {name: add_user(db, name)[0] for name in (USER, REPRODUCER)}
        if signed:
            for name, key in keys.items():
                if key is not None:  # every one is (signed)
                    add_key(db, name, key.with_name(key.name + ".pub").read_text(encoding="utf-8"))
            os.environ[ENV_KEY] = str(keys[USER])  # the demo signs with its own keys, never the user's
        db.dispose()
        userconfig.set_dashboard_token(url, tokens[USER])
        timings["dashboard"] = time.perf_counter() - t

        t = time.perf_counter()
        on_status(f"publishing to the git remote {git_url}{OWNER}/{PROJECT}.git and the dashboard")
        published = publish(project, "latest", remote="origin", dashboard=url, push=True, allow_unsigned=not signed)
        record_url = next((s.get("url") for s in published["steps"] if s.get("target") == "dashboard"), None)
        timings["publish"] = time.perf_counter() - t

        t = time.perf_counter()
        from .records.view import RecordView

        python_mm = RecordView.of(record).environment.python_major_minor or ""
        chosen, image, why = choose_runtime(runtime, base_image, python_mm)
        on_status(f"reproducing {OWNER}/{PROJECT} from the git remote ({chosen} runtime: {why})")
        # a second person reproduces: their token, their key (the author's own rerun would not count)
        userconfig.set_dashboard_token(url, tokens[REPRODUCER])
        if signed:
            os.environ[ENV_KEY] = str(keys[REPRODUCER])
        # the demo's project is cotk-repro's own code, written above: trusted for the host runtimes
        # (without ssh-keygen the demo publishes unsigned, and says so: its own record, reproduced anyway)
        opts = ReproduceOptions(
            runtime=chosen,
            base_image=image,
            submit=True,
            dashboard=url,
            trust_remote_code=True,
            allow_unsigned=not signed,
        )
        reproduction = reproduce(f"{OWNER}/{PROJECT}", opts, on_status=on_status)
        timings["reproduce"] = time.perf_counter() - t
    except BaseException:
        stop()
        raise
    timings["total"] = time.perf_counter() - t_all
    return DemoResult(
        folder=folder,
        project=project,
        record=record,
        dashboard_url=url,
        record_url=record_url,
        reproduction=reproduction,
        runtime=chosen,
        timings=timings,
        stop=stop,
    )


def _free_port(host: str) -> int:
    import socket

    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _die_with_parent(parent: int) -> Callable[[], None]:
    """A ``preexec_fn`` for a server child of the demo: in a process group of its own (a Ctrl-C at the terminal
    reaches the demo, which stops it), and on Linux sent SIGKILL when the demo dies however it dies
    (``prctl(PR_SET_PDEATHSIG)``: ``kill -9`` too, which no clean-up code survives). The signal comes when
    the *thread* that started the child ends, so start it from the main thread. libc is looked up here, before
    the fork: the child only calls (no loader lock taken between fork and exec)."""
    prctl = None
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            prctl = ctypes.CDLL(None, use_errno=True).prctl
        except (OSError, AttributeError):  # pragma: no cover - a libc without prctl: the process group still holds
            prctl = None
    pr_set_pdeathsig, sigkill = 1, 9

    def setup() -> None:
        os.setpgid(0, 0)
        if prctl is not None:
            prctl(pr_set_pdeathsig, sigkill, 0, 0, 0)
            if os.getppid() != parent:  # the demo died before the prctl: nobody is left to stop this child
                os._exit(1)

    return setup


def serve_git(base: Path, host: str = "127.0.0.1", *, timeout: float = 20.0) -> tuple[str, Callable[[], None]]:
    """``git daemon`` serving the repositories under ``base`` read-only on a free port of ``host``:
    ``("git://HOST:PORT/", stop)``. The demo's remote is then one a reproducer may fetch (a path is not).

    The daemon (and the ``git upload-pack`` it forks for each fetch) lives in a process group of its own that
    ``stop`` ends as a whole; it dies with the demo when the demo is killed (:func:`_die_with_parent`)."""
    import signal
    import subprocess

    # `git daemon` runs git-daemon as a child of its own, which the kill-with-the-demo signal (given to the
    # process started here, kept across exec, not passed to children) would miss: start git-daemon itself
    exec_path = subprocess.run(
        ["git", "--exec-path"],  # noqa: S607 - git from PATH, as every git call of cotk-repro
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    daemon = Path(exec_path) / "git-daemon" if exec_path else None
    command = [str(daemon)] if daemon is not None and os.access(daemon, os.X_OK) else ["git", "daemon"]
    for _attempt in range(3):  # a free port can be taken between choosing it and the daemon binding it
        port = _free_port(host)
        proc = subprocess.Popen(  # noqa: S603 - a fixed argument list: the demo's own folder and a port chosen here
            [
                *command,
                "--reuseaddr",
                "--export-all",
                f"--base-path={base}",
                f"--listen={host}",
                f"--port={port}",
                "--max-connections=8",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=_die_with_parent(os.getpid()),  # setpgid and prctl only
        )

        def stop(proc=proc) -> None:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)  # its group: the daemon and any upload-pack it forked
                except ProcessLookupError:
                    pass
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

        deadline = time.monotonic() + timeout
        while proc.poll() is None and time.monotonic() < deadline:
            import socket

            try:
                with socket.create_connection((host, port), timeout=1):
                    return f"git://{host}:{port}/", stop
            except OSError:
                time.sleep(0.1)
        stop()
    raise CotkError(
        "git daemon did not start, so the demo has no git remote to publish to",
        hint="check that `git daemon --help` works (Debian's git package has it)",
    )


def cleanup(folder: Path) -> None:
    """Remove the demo folder and everything in it, ignoring errors."""
    shutil.rmtree(folder, ignore_errors=True)
