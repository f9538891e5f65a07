"""``dashboard worker --url URL --token TOKEN --key KEY``: lend a machine to a dashboard, over HTTP only.

A volunteer has no database access: it leases a job (``POST /api/v1/leases``, the server chooses the record,
:mod:`.leases`), heartbeats it while it runs, reproduces the record exactly as the pool's workers do (the same
:func:`.worker.reproduce_one` with the same :func:`.worker.docker_reproducer`: Docker, no network, the same
limits and budgets, only plain git remotes), signs the verdict with ``--key`` (namespace
``cotk-repro-reproduction``, :func:`cotk_repro.core.signing.sign_reproduction`) and sends it for its lease.
What it sees: the record it was given (public on the dashboard anyway) and its publication; never other
records' jobs, other verdicts, or anything of the database. The dashboard trusts its verdict as far as the
key's proof goes: it recomputes the verdict from the rerun's values (:mod:`.verdicts`), counts it only for a
record the volunteer neither signed nor mirrored, once per user, and verifies a record only when K such
users agree (:mod:`.standing`).

A job that cannot run here (Docker failed, a git remote down) is sent as a ``could not run`` verdict: the job
goes back to the queue for another volunteer, and this one is not given that record again.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..errors import CotkError
from .worker import ALLOWED_PROTOCOLS, Permanent, Reproducer, Retryable, WorkerError, reproduce_one

log = logging.getLogger("cotk_repro.dashboard.volunteer")

#: seconds between lease requests when none is offered
DEFAULT_POLL = 30.0


def _could_not_run(lease: dict[str, Any], reason: str) -> dict[str, Any]:
    """The verdict of a lease this machine could not reproduce (the job goes back to the queue)."""
    from .. import __version__

    return {
        "schema": "cotk-repro/reproduction",
        "schema_version": 1,
        "record_id": lease["record_id"],
        "verdict": "could not run",
        "runtime": "docker",
        "metrics": [],
        "environment_differences": [],
        "rerun": None,
        "error": reason,
        "cotk_repro_version": __version__,
    }


class Volunteer:
    """One volunteer: a dashboard client, a signing key and a reproducer."""

    def __init__(self, client: Any, key: Any, reproducer: Reproducer, *, poll: float = DEFAULT_POLL):
        self.client = client
        self.key = key
        self.reproducer = reproducer
        self.poll = poll
        self.stopping = threading.Event()
        #: verdicts sent so far
        self.sent = 0
        #: why the dashboard refused this volunteer (its token or key), which stops every loop
        self.refused: str | None = None

    def _heartbeats(self, lease: dict[str, Any], done: threading.Event) -> None:
        every = float(lease.get("heartbeat_every") or 10.0)
        while not done.wait(every):
            try:
                self.client.heartbeat_lease(lease["lease"])
            except CotkError as exc:  # expired, or the dashboard unreachable: the verdict will say which
                log.warning("lease %s: heartbeat failed: %s", lease["lease"], exc.message)

    def work(self, lease: dict[str, Any]) -> dict[str, Any]:
        """Reproduce the leased record while heartbeating, sign the verdict and send it; the dashboard's answer."""
        from ..core.signing import sign_reproduction

        done = threading.Event()
        beat = threading.Thread(target=self._heartbeats, args=(lease, done), daemon=True, name="cotk-repro-heartbeat")
        beat.start()
        try:
            try:
                verdict = reproduce_one(
                    self.reproducer,
                    lease["record"],
                    lease.get("status"),
                    lease.get("publication"),
                    lease.get("record_signature"),
                )
            except (Permanent, Retryable) as exc:
                verdict = _could_not_run(lease, str(exc))
            signature = sign_reproduction(verdict, self.key)
            answer = self.client.send_lease_verdict(lease["lease"], verdict, signature)
            self.sent += 1
        finally:
            done.set()
        log.info("record %s: %s (lease %s)", lease["record_id"], answer.get("verdict"), lease["lease"])
        return answer

    def once(self) -> dict[str, Any] | None:
        """Take at most one lease and finish it; its answer, or None when none was offered."""
        lease = self.client.take_lease()
        if lease is None:
            return None
        return self.work(lease)

    def loop(self) -> None:
        """Lease, reproduce, send, until :attr:`stopping` is set; wait ``poll`` s when nothing is offered."""
        while not self.stopping.is_set():
            try:
                got = self.once()
            except CotkError as exc:
                if getattr(exc, "status", None) in (401, 403):  # the token or the key refused: no point in asking again
                    self.refused = exc.message
                    self.stopping.set()
                    return
                log.warning("%s", exc.message)  # the dashboard unreachable, a lease lost: tried again later
                got = None
            if got is None:
                self.stopping.wait(self.poll)


def check_key(key_path: str | Path) -> Any:
    """The signing key at ``key_path``, able to sign now; :class:`WorkerError` otherwise."""
    from ..core.signing import NS_REPRODUCTION, SigningError, key_from_path, sign_bytes

    try:
        key = key_from_path(Path(key_path), "--key")
        sign_bytes(b"cotk-repro volunteer start", NS_REPRODUCTION, key)
    except SigningError as exc:
        raise WorkerError(f"the volunteer's key cannot sign: {exc.message}") from None
    return key


def run_volunteer(
    url: str,
    token: str,
    key_path: str | Path,
    *,
    concurrency: int = 1,
    once: bool = False,
    reproducer: Reproducer | None = None,
    base_image: str | None = None,
    timeout: float | None = None,
    poll: float = DEFAULT_POLL,
    on_ready: Callable[[str], None] | None = None,
    client: Any = None,
) -> int:
    """Lend this machine to the dashboard at ``url`` (blocking until SIGTERM / Ctrl-C, or after one lease with
    ``once``); how many verdicts were sent.

    ``reproducer`` defaults to :func:`.worker.docker_reproducer` (the pool's own); tests pass a stand-in (a test
    double that answers without Docker) to exercise the lease protocol alone.
    """
    from ..remote.dashboard import DashboardClient, DashboardError
    from .worker import check_docker, docker_reproducer

    key = check_key(key_path)
    client = client or DashboardClient(url, token)
    try:
        user = client.whoami()
    except DashboardError as exc:
        raise WorkerError(exc.message) from None
    if reproducer is None:
        os.environ["GIT_ALLOW_PROTOCOL"] = ALLOWED_PROTOCOLS  # git itself refuses any other transport
        check_docker()
        reproducer = docker_reproducer(base_image or os.environ.get("COTK_REPRO_BASE_IMAGE") or None, timeout=timeout)
    volunteer = Volunteer(client, key, reproducer, poll=poll)
    if on_ready:
        on_ready(f"volunteer for {client.url} as {user} ({key.public.fingerprint}), {concurrency} at once")
    if once:
        try:
            return 0 if volunteer.once() is None else 1
        except DashboardError as exc:
            raise WorkerError(exc.message) from None
    with ThreadPoolExecutor(concurrency, thread_name_prefix="cotk-repro-volunteer") as pool:
        futures = [pool.submit(volunteer.loop) for _ in range(concurrency)]
        try:
            while not all(f.done() for f in futures):
                time.sleep(0.5)
        except KeyboardInterrupt:
            volunteer.stopping.set()
    if volunteer.refused:
        raise WorkerError(volunteer.refused)
    return volunteer.sent
