"""One confined container for somebody else's code: bounded in time, memory, CPU, disk, output and reads.

The container's first process is ``sleep`` until its deadline (the time limit plus
:func:`.gc.grace`): the engine stops the container then, whether or not the reproducer is still
there to do it (a process cannot signal its namespace's first process). The code runs beside it as
an ``exec``; its stdout and stderr are streamed, and only the last :data:`TAIL` bytes of each are kept.

What the container can write is bounded: its root filesystem is read-only, its home (the work
folder, when there is one) is a tmpfs *volume* of at most ``disk`` bytes (a volume, so that the result
can be copied out after the run), ``/tmp`` a tmpfs of at most ``disk`` bytes; both count against the
memory limit too. Docker's log of the container is ``json-file`` capped at ``max-size``/``max-file``.
Nothing it writes reaches the host's disk.

Reads of what the code wrote are bounded before they are read: :meth:`Confined.read_file` asks the
engine for the file's size (the archive's stat header) and refuses one over the cap in one sentence;
the archive is then streamed, its tar header checked again, and never more than the cap is read.
"""

from __future__ import annotations

import tarfile
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.tail import TAIL, Tail
from . import ReproduceError
from .engine import NOBODY, engine_step, remove_quietly
from .gc import grace
from .gc import labels as gc_labels
from .limits import docker_size, size_bytes

#: Docker's own log of a confined container (json-file): never more than this on the host's disk
LOG_OPTIONS: dict[str, str] = {"max-size": "1m", "max-file": "2"}
#: the largest result file read back (a result is metric values and a data section, not a data set)
RESULT_CAP = 64 * 1024 * 1024
#: an entry that prints more than this to stdout and stderr together is stopped: its run fails with that reason
#: (only the last few MiB are kept anyway; printing without end must not hold a worker for its whole time limit)
OUTPUT_CAP = 2 * 1024**3
_CHUNK = 1024 * 1024


def confinement(memory: str, cpus: float, disk: str) -> dict[str, Any]:
    """``containers.create`` arguments of every container that runs somebody else's code (build, run, probe)."""
    from docker.types import LogConfig

    return {
        "network_mode": "none",
        "mem_limit": memory,
        "memswap_limit": memory,
        "nano_cpus": int(float(cpus) * 1e9),
        "pids_limit": 512,
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "read_only": True,
        "tmpfs": {"/tmp": f"size={size_bytes(disk)},mode=1777,exec,nosuid,nodev"},
        "log_config": LogConfig(type="json-file", config=dict(LOG_OPTIONS)),
    }


@dataclass
class ExecResult:
    """How an exec ended: exit status (None: killed at the time limit), the kept output, the cause."""

    rc: int | None
    stdout: Tail
    stderr: Tail
    seconds: float
    timed_out: bool = False
    #: stdout and stderr together passed ``max_output`` bytes: the process was stopped (rc None)
    output_exceeded: bool = False
    oom: bool = False
    disk_full: bool = False
    read_only: bool = False


@dataclass
class Confined:
    """A confined container of ``image`` (see the module's text). ``home``: where the size-capped tmpfs
    volume is mounted (None: no volume, only ``/tmp``); ``user``: the user the code runs as."""

    client: Any
    image: str
    kind: str
    timeout: float
    memory: str
    cpus: float
    disk: str
    home: str | None = None
    user: str | None = None
    extra_labels: dict[str, str] = field(default_factory=dict)
    name: str = ""
    container: Any = None
    volume: Any = None
    started: float = 0.0

    def __post_init__(self) -> None:
        self.name = self.name or f"cotk-repro-{self.kind}-{uuid.uuid4().hex[:16]}"

    # -- life ------------------------------------------------------------------------------------
    def start(self, step: str) -> Confined:
        """Create the volume and the container, and start it (pid 1 sleeps until the deadline)."""
        from docker.types import Mount

        marks = gc_labels(self.kind, self.timeout, **self.extra_labels)
        mounts = []
        with engine_step(step):
            if self.home is not None:
                self.volume = self.client.volumes.create(
                    name=self.name,
                    driver="local",
                    labels=marks,
                    driver_opts={
                        "type": "tmpfs",
                        "device": "tmpfs",
                        "o": f"size={size_bytes(self.disk)},mode=1777,nosuid,nodev",
                    },
                )
                mounts.append(Mount(self.home, self.volume.name, type="volume"))
            self.container = self.client.containers.create(
                self.image,
                entrypoint=["sleep", str(int(self.timeout + grace()))],
                command=[],
                name=self.name,
                labels=marks,
                mounts=mounts,
                user=self.user or NOBODY,
                stop_signal="SIGKILL",
                **confinement(self.memory, self.cpus, self.disk),
            )
            self.container.start()
        self.started = time.time()
        return self

    def remove(self) -> None:
        """Remove the container and its volume; gone already is fine (also after an interrupt)."""
        remove_quietly(self.client, self.container or self.name)
        if self.volume is not None or self.home is not None:
            try:
                vol = self.volume or self.client.volumes.get(self.name)
                vol.remove(force=True)
            except Exception:
                pass

    def __enter__(self) -> Confined:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()

    # -- in ----------------------------------------------------------------------------------------
    def ids(self, user: str | None = None) -> tuple[int, int]:
        """The numeric uid and gid of ``user`` in the image (``id``)."""
        res = self.exec(["id"], user=user, timeout=60, step="user lookup")
        text = res.stdout.value().decode("utf-8", "replace")
        try:
            uid = int(text.split("uid=", 1)[1].split("(", 1)[0].split()[0])
            gid = int(text.split("gid=", 1)[1].split("(", 1)[0].split()[0])
        except (IndexError, ValueError):
            raise ReproduceError(
                f"cannot tell the user {user or self.user} of the image apart (`id` said {text.strip()[:80]!r})",
                step="run",
            ) from None
        return uid, gid

    def put(self, dest: str, members: Callable[[tarfile.TarFile], None], scratch: Path, step: str) -> None:
        """Copy files in: ``members(tar)`` adds them to a tar archive written to ``scratch`` (on disk, not in
        memory), which is streamed to ``dest`` in the container (its volume)."""
        with tempfile.TemporaryFile(dir=scratch) as fh:
            with tarfile.open(fileobj=fh, mode="w") as tar:
                members(tar)
            fh.seek(0)
            with engine_step(step):
                self.client.api.put_archive(self.container.id, dest, fh)

    # -- run ---------------------------------------------------------------------------------------
    def exec(
        self,
        cmd: list[str],
        *,
        user: str | None = None,
        workdir: str | None = None,
        environment: dict[str, str] | None = None,
        timeout: float | None = None,
        step: str = "run",
        tail: int = TAIL,
        sinks: tuple[Any, Any] | None = None,
        max_output: int | None = None,
    ) -> ExecResult:
        """Run ``cmd`` in the container with a time limit; stdout/stderr streamed, the last ``tail`` bytes kept
        (and, given ``sinks``, two binary files, also written as a tail of ``tail`` bytes at the end).
        ``max_output``: the process is stopped once stdout and stderr together pass this many bytes
        (``output_exceeded``): an entry printing without end must not hold a worker for its whole time limit."""
        api = self.client.api
        limit = self.timeout if timeout is None else timeout
        out, err = Tail(tail), Tail(tail)
        t0 = time.monotonic()
        with engine_step(step):
            ex = api.exec_create(
                self.container.id,
                cmd,
                user=user or self.user or "",
                workdir=workdir,
                environment=environment,
                stdout=True,
                stderr=True,
            )
            stream = api.exec_start(ex["Id"], stream=True, demux=True)
        reader = threading.Thread(target=_drain, args=(stream, out, err), daemon=True)
        reader.start()
        exceeded = False
        while reader.is_alive() and time.monotonic() - t0 <= limit:
            reader.join(0.25)
            if max_output is not None and out.total + err.total > max_output:
                exceeded = True
                break
        info: dict[str, Any] = {"Running": True}
        with engine_step(step):
            while not exceeded and time.monotonic() - t0 <= limit:  # output closed; the process may be ending
                info = api.exec_inspect(ex["Id"])
                if not info.get("Running"):
                    break
                time.sleep(0.1)
        timed_out = bool(info.get("Running")) and not exceeded
        seconds = round(time.monotonic() - t0, 3)
        rc: int | None
        if timed_out or exceeded:
            self.kill()
            reader.join(10)
            rc = None
        else:
            rc = info.get("ExitCode")
            rc = int(rc) if rc is not None else -1
        result = ExecResult(
            rc=rc, stdout=out, stderr=err, seconds=seconds, timed_out=timed_out, output_exceeded=exceeded
        )
        if sinks is not None:
            for sink, tail_ in zip(sinks, (out, err)):
                tail_.dump(sink)
        if rc not in (None, 0):
            result.oom = rc == 137 and self._oom_since(t0)
            text = err.value()[-65536:]
            result.disk_full = b"No space left on device" in text or b"ENOSPC" in text
            result.read_only = b"Read-only file system" in text or b"EROFS" in text
        return result

    def _oom_since(self, t0_monotonic: float) -> bool:
        """Whether the engine saw the memory limit kill a process of this container since the exec started."""
        since = int(time.time() - (time.monotonic() - t0_monotonic)) - 1
        try:
            events = self.client.events(
                since=since,
                until=int(time.time()) + 1,
                decode=True,
                filters={"container": self.container.id, "event": "oom"},
            )
            if any(True for _ in events):
                return True
            stats = self.client.api.stats(self.container.id, stream=False, one_shot=True)
            mem = stats.get("memory_stats") or {}
            limit = mem.get("limit") or 0
            return bool(limit) and (mem.get("max_usage") or 0) >= limit * 0.98
        except Exception:
            return False

    def kill(self) -> None:
        from docker.errors import APIError, NotFound

        try:
            self.container.kill()
        except (APIError, NotFound):
            pass
        except Exception:
            pass

    def freeze(self) -> None:
        """Stop every process still running (background children of the code) before anything is read out."""
        from docker.errors import APIError

        try:
            self.container.pause()
        except APIError:
            pass

    # -- out ---------------------------------------------------------------------------------------
    def read_file(self, path: str, cap: int, what: str, step: str = "run") -> bytes | None:
        """The bytes of the regular file ``path`` (None when there is none), at most ``cap`` of them: a larger
        one is refused with one sentence before it is read."""
        from docker.errors import NotFound

        with engine_step(step):
            try:
                stat = self._stat(path)
            except NotFound:
                return None
            if stat is None:
                return None
            size = int(stat.get("size") or 0)
            if size > cap:
                raise too_big(what, size, cap)
            if stat.get("linkTarget") or (int(stat.get("mode") or 0) & 0o20000000000):  # link or directory
                return None
            with self._archive(path) as tar:
                for member in tar:
                    if not member.isfile():
                        return None
                    if member.size > cap:
                        raise too_big(what, member.size, cap)
                    fh = tar.extractfile(member)
                    data = fh.read(cap + 1) if fh else b""
                    if len(data) > cap:
                        raise too_big(what, len(data), cap)
                    return data
        return None

    def copy_files(
        self, path: str, accept: Callable[[tarfile.TarInfo], Path | None], cap: int, what: str, step: str
    ) -> list[Path]:
        """Stream the tree at ``path`` out; each regular file ``accept`` gives a destination for is written there
        in chunks (never whole in memory), at most ``cap`` bytes in all."""
        written: list[Path] = []
        total = 0
        with engine_step(step):
            with self._archive(path) as tar:
                for member in tar:
                    if not member.isfile():
                        continue
                    dest = accept(member)
                    if dest is None:
                        continue
                    total += member.size
                    if total > cap:
                        raise too_big(what, total, cap)
                    fh = tar.extractfile(member)
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    with dest.open("wb") as out:
                        left = member.size
                        while fh is not None and left > 0:
                            chunk = fh.read(min(_CHUNK, left))
                            if not chunk:
                                break
                            out.write(chunk)
                            left -= len(chunk)
                    written.append(dest)
        return written

    def _stat(self, path: str) -> dict[str, Any] | None:
        from docker.utils import decode_json_header

        api = self.client.api
        res = api.head(
            api._url("/containers/{0}/archive", self.container.id), params={"path": path}, timeout=api.timeout
        )
        api._raise_for_status(res)
        header = res.headers.get("x-docker-container-path-stat")
        return decode_json_header(header) if header else None

    def _archive(self, path: str) -> _Archive:
        api = self.client.api
        res = api._get(api._url("/containers/{0}/archive", self.container.id), params={"path": path}, stream=True)
        api._raise_for_status(res)
        return _Archive(res)


class _Archive:
    """A streamed tar archive from the engine (``tarfile`` stream mode): closed, and the engine stops sending,
    as soon as the caller is done, even when it stops early."""

    def __init__(self, response):
        self.response = response
        response.raw.decode_content = True
        self.tar = tarfile.open(fileobj=response.raw, mode="r|")

    def __enter__(self) -> tarfile.TarFile:
        return self.tar

    def __exit__(self, *exc) -> None:
        try:
            self.tar.close()
        finally:
            self.response.close()


def too_big(what: str, size: int, cap: int) -> ReproduceError:
    """The one sentence for stranger bytes over their read cap (nothing of them was read)."""
    return ReproduceError(
        f"{what} is {docker_size(size) if size % 1024 == 0 else f'{size} bytes'}, more than the "
        f"{docker_size(cap)} the reproducer reads back, so it was not read",
        step="run",
    )


def _drain(stream: Iterable, out: Tail, err: Tail) -> None:
    try:
        for o, e in stream:
            if o:
                out.write(o)
            if e:
                err.write(e)
    except Exception:
        pass
