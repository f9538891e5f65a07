"""What a reproduction leaves when its reproducer dies (SIGKILL, power loss): found by label, removed.

Every container and scratch volume the reproducer makes carries labels (:func:`labels`): the kind
(``cotk-repro.reproduce``), a deadline (``cotk-repro.deadline``, Unix seconds: the time limit plus a
grace period) and its owner (``cotk-repro.owner``: host, process id and the process's start time).
Each work folder holds an owner mark (:data:`MARK`). :func:`collect`, run at the start of every
Docker reproduction and by ``cotk-repro gc``, removes

* containers and volumes past their deadline, or whose owner on this host is gone;
* work folders (``cotk-repro-reproduce-*`` in the temporary folder) whose owner is gone.

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


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (``/proc/PID/stat`` field 22), None without /proc."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw.rsplit(")", 1)[-1].split()[19]


def owner() -> str:
    """``host:pid:start``: this process, told apart from a later one with the same pid."""
    return f"{socket.gethostname()}:{os.getpid()}:{_start_time(os.getpid()) or '-'}"


def owner_alive(text: str | None) -> bool | None:
    """Whether the owner named by ``text`` still runs; None when it cannot be told (another host, no mark)."""
    if not text:
        return None
    try:
        host, pid_text, start = text.rsplit(":", 2)
        pid = int(pid_text)
    except ValueError:
        return None
    if host != socket.gethostname() or pid <= 0:
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
    return {LABEL: kind, DEADLINE: str(int(time.time() + timeout + GRACE)), OWNER: owner(), **extra}


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
            report.workdirs.append(str(folder))
            if not dry_run:
                shutil.rmtree(folder, ignore_errors=True)
    return report


def _collect_docker(client, report: Report, now: float, dry_run: bool) -> None:
    try:
        containers = client.containers.list(all=True, filters={"label": DEADLINE})
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
        names.append(item.name)
        if not dry_run:
            try:
                item.remove(force=True)
            except NotFound:
                pass
            except APIError as exc:
                report.errors.append(f"removing {kind} {item.name}: {str(exc)[:200]}")
