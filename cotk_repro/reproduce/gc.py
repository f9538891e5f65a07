"""What a reproduction leaves when its reproducer dies (SIGKILL, power loss): found by label, removed.

Every container and scratch volume the reproducer makes carries labels (:func:`labels`): the kind
(``cotk-repro.reproduce``), a deadline (``cotk-repro.deadline``, Unix seconds: the time limit plus a
grace period) and its owner (``cotk-repro.owner``: host, boot id, PID namespace, process id and the
process's start time, unique per process across PID namespaces: :func:`owner`).
Each work folder holds an owner mark (:data:`MARK`). :func:`collect`, run at the start of every
Docker reproduction and by ``cotk-repro gc``, removes

* containers and volumes past their deadline, or whose owner, in this boot and PID namespace, is gone
  (an owner this process cannot see, such as one in another container, is left to its deadline);
* work folders (``cotk-repro-reproduce-*`` in the temporary folder) whose owner is gone.

The :class:`Report` lists what was removed, not what was tried: a removal that failed is an error, and a
thing that vanished first (its own deadline, another ``gc``) is not counted.

The container's own deadline does not wait for this: its first process is ``sleep`` until the deadline
(the entry runs beside it), so the engine stops it at the deadline whether or not anybody is left to ask.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .engine import LABEL

DEADLINE = "cotk-repro.deadline"
OWNER = "cotk-repro.owner"
#: the owner mark inside a work folder
MARK = ".cotk-repro-owner"
WORKDIR_PREFIX = "cotk-repro-reproduce-"
#: added to a time limit for the deadline a container keeps by itself (the reproducer's own limit comes first)
GRACE = 30.0
#: a shorter grace period in seconds (never longer than :data:`GRACE`, at least 1 s): for a test that waits for a
#: container to stop at its own deadline, which need not wait the 30 s for that
GRACE_ENV = "COTK_REPRO_DEADLINE_GRACE"


def grace() -> float:
    """The grace period: :data:`GRACE`, or less where ``$COTK_REPRO_DEADLINE_GRACE`` asks for less."""
    try:
        asked = float(os.environ.get(GRACE_ENV, ""))
    except ValueError:
        return GRACE
    return min(GRACE, max(1.0, asked)) if asked == asked else GRACE  # NaN: the default


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (``/proc/PID/stat`` field 22), None without /proc."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw.rsplit(")", 1)[-1].split()[19]


def _boot_id() -> str:
    """This kernel's boot id (the same in every container on the machine), ``-`` without /proc."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or "-"
    except OSError:
        return "-"


def _pid_namespace() -> str:
    """The inode of this process's PID namespace: two processes with one pid in two namespaces differ here."""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "-"


def owner() -> str:
    """``host:boot:pidns:pid:start``: this process, told apart from one with the same pid in another PID namespace
    (a reproducer in a ``--network host`` container shares the host's name) and from a later one with its pid."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{_boot_id()}:{_pid_namespace()}:{pid}:{_start_time(pid) or '-'}"


def owner_alive(text: str | None) -> bool | None:
    """Whether the owner named by ``text`` still runs; None when this process cannot tell (another host or
    boot, another PID namespace, a label of an older version, no mark): such a thing waits for its deadline."""
    if not text:
        return None
    try:
        host, boot, pidns, pid_text, start = text.rsplit(":", 4)
        pid = int(pid_text)
    except ValueError:
        return None  # an older version's host:pid:start does not say which PID namespace: never judged
    if host != socket.gethostname() or pid <= 0 or boot != _boot_id() or pidns != _pid_namespace():
        return None
    if start != "-" and Path("/proc").is_dir():
        return _start_time(pid) == start
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return None
    return True


def labels(kind: str, timeout: float, **extra: str) -> dict[str, str]:
    """The labels of a container or volume of kind ``kind`` (run, build, env) that runs up to ``timeout`` s."""
    return {LABEL: kind, DEADLINE: str(int(time.time() + timeout + grace())), OWNER: owner(), **extra}


def mark_workdir(workdir: Path) -> None:
    """Mark a work folder as this process's, so that the next run or `gc` removes it if this one dies."""
    try:
        (workdir / MARK).write_text(json.dumps({"owner": owner(), "created": time.time()}), encoding="utf-8")
    except OSError:
        pass


def unmark_workdir(workdir: Path) -> None:
    """A work folder kept on purpose (``--keep``): never collected."""
    try:
        (workdir / MARK).unlink()
    except OSError:
        pass


@dataclass
class Report:
    """What :func:`collect` removed (or, with ``dry_run``, would remove)."""

    containers: list[str] = field(default_factory=list)
    volumes: list[str] = field(default_factory=list)
    workdirs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def removed(self) -> int:
        return len(self.containers) + len(self.volumes) + len(self.workdirs)

    def describe(self) -> str:
        parts = [
            f"{len(v)} {k}"
            for k, v in (
                ("container(s)", self.containers),
                ("volume(s)", self.volumes),
                ("work folder(s)", self.workdirs),
            )
            if v
        ]
        return ", ".join(parts) or "nothing"

    def as_dict(self) -> dict[str, Any]:
        return {
            "containers": self.containers,
            "volumes": self.volumes,
            "workdirs": self.workdirs,
            "errors": self.errors,
        }


def expired(item_labels: dict[str, str] | None, now: float | None = None) -> bool:
    """Past its deadline, or its owner on this host is gone."""
    item_labels = item_labels or {}
    try:
        deadline = float(item_labels.get(DEADLINE, "inf"))
    except ValueError:
        deadline = float("inf")
    if deadline <= (now if now is not None else time.time()):
        return True
    return owner_alive(item_labels.get(OWNER)) is False


def collect(client=None, *, tmp: Path | None = None, dry_run: bool = False) -> Report:
    """Remove expired containers, volumes and work folders (see the module's text); ``client``: a Docker
    client, or None to leave Docker alone (no engine)."""
    report = Report()
    now = time.time()
    if client is not None:
        _collect_docker(client, report, now, dry_run)
    root = Path(tmp) if tmp is not None else Path(tempfile.gettempdir())
    try:
        folders = sorted(root.glob(WORKDIR_PREFIX + "*"))
    except OSError:
        folders = []
    for folder in folders:
        mark = folder / MARK
        try:
            text = json.loads(mark.read_text(encoding="utf-8")).get("owner")
        except (OSError, ValueError, AttributeError):
            continue  # no mark: kept with --keep, or made by an older version
        if owner_alive(text) is False:
            if not dry_run:
                shutil.rmtree(folder, ignore_errors=True)
                if folder.exists():
                    report.errors.append(f"removing work folder {folder}: some of it could not be removed")
                    continue
            report.workdirs.append(str(folder))
    return report


def _collect_docker(client, report: Report, now: float, dry_run: bool) -> None:
    try:
        # ignore_removed: a container removed between the engine's list and its inspection (another reproduction
        # ending, another gc) is not ours to report
        containers = client.containers.list(all=True, filters={"label": DEADLINE}, ignore_removed=True)
    except Exception as exc:
        report.errors.append(f"listing containers: {str(exc)[:200]}")
        return
    _remove_expired("container", containers, lambda c: c.labels or {}, report.containers, report, now, dry_run)
    try:
        volumes = client.volumes.list(filters={"label": DEADLINE})
    except Exception as exc:
        report.errors.append(f"listing volumes: {str(exc)[:200]}")
        return
    _remove_expired("volume", volumes, lambda v: v.attrs.get("Labels") or {}, report.volumes, report, now, dry_run)


def _remove_expired(kind: str, items, labels_of, names: list, report: Report, now: float, dry_run: bool) -> None:
    """Remove (or, with ``dry_run``, only list in ``names``) the Docker ``items`` of ours past their deadline."""
    from docker.errors import APIError, NotFound

    for item in items:
        labels = labels_of(item)
        if labels.get(LABEL) is None or not expired(labels, now):
            continue
        if not dry_run:
            try:
                item.remove(force=True)
            except NotFound:
                continue  # gone already (its own deadline, another gc): not removed by this one
            except APIError as exc:
                report.errors.append(f"removing {kind} {item.name}: {str(exc)[:200]}")
                continue
        names.append(item.name)
