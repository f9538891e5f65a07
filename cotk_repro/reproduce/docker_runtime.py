"""The ``docker`` runtime: render the Dockerfile, build it offline, rerun the entry in a locked-down container.

* the Dockerfile is cotk-repro's own (``templates/Dockerfile.j2``), rendered from the
  validated lock, entry and cwd; the record's ``environment.dockerfile`` is never built
  (when it differs from what this version renders, a warning gives both sha256s);
* build context: ``requirements.lock``, ``wheelhouse/`` (+ ``wheelhouse/local/``),
  ``code/`` (the recorded commit); build arg ``BASE_IMAGE``. Packages that need a build
  are built into wheels beforehand in the sandbox (:mod:`.sandbox`), never on the host;
* the build runs with ``network_mode="none"`` and the ``--timeout`` limit; on expiry the
  running build container is killed, and the build's containers and dangling images go;
* the image is tagged ``cotk-repro-reproduce:<key>``, the key being a hash of the lock,
  the rendered Dockerfile, the base image and what gets copied in (the code tree, local
  wheels): a second reproduce of the same thing skips the wheelhouse and the build;
* the entry runs in a :class:`.container.Confined` container: no network, the image's
  non-root user (never root), all capabilities dropped, no-new-privileges, a pids limit,
  the reproducer's CPU, memory, disk and wall-time limits (:mod:`.limits`), a read-only
  root filesystem with the checkout copied into a size-capped tmpfs home, output kept to
  a tail, a deadline the container keeps by itself; the result file is copied out with a
  size cap; the container and its volume are removed in every case (also on Ctrl-C,
  SIGTERM, SIGHUP; after SIGKILL, by the next run or ``cotk-repro gc``, :mod:`.gc`);
* the base image has the record's Python minor version (:mod:`.base_images`): with none
  given, ``python:X.Y-slim``, pulled when missing; when it cannot be pulled (no registry), a
  local image with Python X.Y (``cotk-repro-base:bookworm`` 3.11, ``cotk-repro-base:trixie``
  3.13, labelled ``org.cotk-repro.python``), and the verdict says so; with none, one sentence
  before any build (exit 2).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from pathlib import Path
from typing import Any

from ..capture.dockerfile import render_dockerfile
from ..core import jsonbudget
from ..core.userconfig import cache_dir
from . import ReproduceError
from .container import OUTPUT_CAP, RESULT_CAP, Confined
from .engine import LABEL, NOBODY, connect, engine_step, list_images, remove_quietly
from .job import ENV_SNIPPET, Job, Rerun, describe_exit, now_iso, parse_result

IMAGE_REPO = "cotk-repro-reproduce"
_LAYER_LINE = re.compile(r"^ ---> ([0-9a-f]{12,64})\s*$")
_IMAGE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@-]{0,250}")
_RUNNING_LINE = re.compile(r"^ ---> Running in ([0-9a-f]{12,64})\s*$")
#: the entry's home (a size-capped tmpfs volume in the run) and the checkout in it (templates/Dockerfile.j2)
HOME = "/home/runner"
WORK_ROOT = HOME + "/work"
#: the most of the environment probe's output that is read
ENV_CAP = 16 * 1024 * 1024
_NO_ENV: dict[str, Any] = {"python": {"version": None}, "packages": []}
#: the build's output lines kept (the last ones)
BUILD_LINES = 5000
#: what the engine says when an image or layer the build took from its cache was removed under it (another
#: reproduction on this engine removing its image, whose lower layers this build matched a moment before): the
#: build did nothing wrong, and is run once more
_VANISHED = re.compile(r"no such image|layer does not exist|failed to get layer", re.IGNORECASE)


class DockerRuntime:
    """Reruns a record in a Docker container without network, as non-root, with CPU/memory/time limits."""

    name = "docker"
    on_host = False
    description = "a Docker container without network, as a non-root user, with CPU/memory/time limits"

    def __init__(self) -> None:
        self.client: Any = None

    def connect(self):
        if self.client is None:
            self.client = connect()
        return self.client

    # -- the image -----------------------------------------------------------------
    def dockerfile(self, job: Job) -> str:
        """The Dockerfile this cotk-repro renders for the record; warns when the recorded one differs."""
        cwd = job.command.get("cwd") or "."
        if job.config_base_image is not None and not _IMAGE_NAME.fullmatch(str(job.config_base_image)):
            raise ReproduceError(
                f"the project's reproduce.base_image {str(job.config_base_image)[:80]!r} is not an image name",
                step="image build",
            )
        text, sha = render_dockerfile(
            python_major_minor=job.python_mm,
            entry=job.command["entry"],
            args=job.args,
            cwd=cwd,
            base_image=job.config_base_image,
        )
        recorded = job.env.get("dockerfile")
        if isinstance(recorded, str) and recorded != text:
            recorded_sha = hashlib.sha256(recorded.encode("utf-8")).hexdigest()
            job.warnings.append(
                f"the record's Dockerfile (sha256 {recorded_sha}) differs from the one this cotk-repro "
                f"renders for it (sha256 {sha}); the recorded one was not used"
            )
        return text

    def image_key(self, job: Job, base: str, dockerfile: str) -> str:
        from .wheelhouse import local_identity, split_packages

        _index, local = split_packages(job.packages)
        payload = json.dumps(
            {
                "lock": job.lock,
                "dockerfile": dockerfile,
                "base": base,
                "tree": job.tree,
                "local": local_identity(local, job.tree),
            },
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode()).hexdigest()

    def base_image(self, job: Job) -> str:
        """The base image, one with the record's Python minor version (:mod:`.base_images`): the one asked
        for, else python:X.Y-slim (pulled), else a local image with Python X.Y; else one sentence, exit 2."""
        from docker.errors import DockerException, ImageNotFound

        from .base_images import check_explicit, choose_default

        client = self.client
        if job.base_image and not _IMAGE_NAME.fullmatch(job.base_image):
            raise ReproduceError(f"the base image {job.base_image[:80]!r} is not an image name", step="base image")
        if job.base_image:
            with engine_step("base image"):
                try:
                    client.images.get(job.base_image)
                except ImageNotFound:
                    job.on_status(f"the base image {job.base_image} is not on this machine; pulling it")
                    job.warnings.append(
                        f"the base image {job.base_image} was not on this machine and was pulled from its registry"
                    )
                    try:
                        client.images.pull(job.base_image)
                    except DockerException as exc:
                        raise ReproduceError(
                            f"the base image {job.base_image} is not on this machine and cannot be "
                            f"pulled ({_engine_message(exc)})",
                            step="base image",
                            hint="pass --base-image with an image that has python3",
                        ) from None
                check_explicit(client, job.base_image, job.python_mm)
            return job.base_image
        with engine_step("base image"):
            return choose_default(client, job.python_mm, job.on_status, job.warnings, engine_message=_engine_message)

    def prepare(self, job: Job) -> dict[str, Any]:
        from docker.errors import ImageNotFound

        client = self.connect()
        base = self.base_image(job)
        dockerfile = self.dockerfile(job)
        key = self.image_key(job, base, dockerfile)
        tag = f"{IMAGE_REPO}:{key[:24]}"
        with engine_step("image lookup"):
            try:
                image = client.images.get(tag)
            except ImageNotFound:
                image = None
        if image is not None:
            job.steps.skip("wheel download", "image cached")
            job.steps.skip("image build", "cached")
        else:
            from .sandbox import SandboxBuilder

            sandbox = SandboxBuilder(
                client,
                base,
                timeout=job.timeout,
                memory=job.memory,
                cpus=job.cpus,
                python_mm=job.python_mm,
                disk=job.disk,
            )
            wheelhouse = job.wheelhouse(sandbox)
            with job.steps.step("image build", f"building the Docker image {tag}"):
                image = self._build(job, wheelhouse, dockerfile, base, tag, key)
        self.image = image
        self.tag = tag
        env_cache = cache_dir() / "images" / f"{key}.json"
        self.key = key
        if env_cache.is_file():
            env_cache.touch()  # its time is when the image was last used (the cache's least recently used goes first)
            env = json.loads(env_cache.read_text())
        else:
            env = self._image_env(job, tag)
            env_cache.parent.mkdir(parents=True, exist_ok=True)
            env_cache.write_text(json.dumps(env))
        self.env_info = env
        return env

    def finish(self, cache: int) -> None:
        """After the verdict (whatever it is): with ``cache`` 0 this reproduction's image is removed; else at most
        ``cache`` reproduction images stay, the least recently used removed first (a cached environment goes with
        its image; only images whose environment is in this cache folder count). An image a container still uses
        is left alone (``docker rmi`` without force)."""
        from docker.errors import APIError, DockerException, ImageNotFound

        tag = getattr(self, "tag", None)
        if self.client is None or tag is None:  # nothing was built or looked up
            return
        folder = cache_dir() / "images"
        try:
            if cache <= 0:
                doomed = [self.client.images.get(tag)]
            else:
                images = list_images(self.client, filters={"label": f"{LABEL}=image"})
                # the cache is the images this cache folder has an environment of (another user's are not ours)
                ours = [
                    i for i in images if any(t.startswith(IMAGE_REPO + ":") for t in i.tags) and _last_used(folder, i)
                ]
                doomed = sorted(ours, key=lambda i: _last_used(folder, i), reverse=True)[cache:]
        except (DockerException, ImageNotFound):
            return
        for image in doomed:
            key = (image.labels or {}).get("cotk-repro.key", "")
            try:
                self.client.images.remove(image.id, force=False)
            except (APIError, ImageNotFound):
                continue
            if re.fullmatch(r"[0-9a-f]{16,128}", key):
                (folder / f"{key}.json").unlink(missing_ok=True)

    def _build(self, job: Job, wheelhouse, dockerfile: str, base: str, tag: str, key: str):
        from docker.errors import ImageNotFound

        ctx = job.workdir / "context"
        ctx.mkdir(exist_ok=True)
        (ctx / "Dockerfile").write_text(dockerfile, encoding="utf-8")
        (ctx / "requirements.lock").write_text(job.lock, encoding="utf-8")
        wheelhouse.materialize(ctx / "wheelhouse")
        if job.code != ctx / "code":  # core exports the checkout into context/code
            raise ReproduceError("internal error: the checkout is not in the build context", step="image build")
        log_path = job.logs / "build.log"
        deadline = time.monotonic() + job.timeout
        build = _Build(self.client, str(ctx), tag, base, key)
        build.start()
        build.join(job.timeout)
        if not build.is_alive() and build.error is not None and _VANISHED.search(build.error):
            # a layer matched from the cache was removed under it by a reproduction beside this one: once more,
            # within the same time limit (the layers it needs are built anew where they are gone). Its own layers
            # stay: the second build matches them from the cache (dropping them could delete, in turn, a layer that
            # another build beside this one has just matched)
            earlier = build.lines
            build = _Build(self.client, str(ctx), tag, base, key)
            build.lines = [*earlier, "(an image layer the build used was removed meanwhile: building once more)"]
            build.step_start = len(build.lines)
            build.start()
            build.join(max(0.0, deadline - time.monotonic()))
        timed_out = build.is_alive()
        if timed_out:
            build.stop()
        log_path.write_text("\n".join(build.lines) + "\n", encoding="utf-8")
        if timed_out or build.error is not None:
            self._drop_layers(build.layers)
            for cid in build.containers:
                remove_quietly(self.client, cid)
        if timed_out:
            raise ReproduceError(
                f"building the Docker image ran past the time limit of {job.timeout:g} s and was stopped",
                log="\n".join(build.lines[-20:]) or None,
                step="image build",
                hint=f"raise it with --timeout SECONDS; full build log: {log_path}",
            )
        if build.error is not None:
            lines, step_start = build.lines, build.step_start
            failing = (
                lines[step_start] if step_start < len(lines) and lines[step_start].startswith("Step ") else "the build"
            )
            raise ReproduceError(
                f"building the Docker image failed at {failing.strip()[:160]}",
                log="\n".join(lines[step_start:][-30:]),
                step="image build",
                hint=f"full build log: {log_path}; --base-image picks another base image",
            )
        with engine_step("image build"):
            try:
                return self.client.images.get(tag)
            except ImageNotFound:
                raise ReproduceError(
                    "the Docker build finished but produced no image",
                    log="\n".join(build.lines[-20:]),
                    step="image build",
                ) from None

    def _drop_layers(self, layers: list[str]) -> None:
        """Remove the intermediate images a failed build left (its last untagged step image and the
        untagged parents nothing else uses); the base image and any tagged image are never touched."""
        from docker.errors import APIError, ImageNotFound

        if not layers:
            return
        try:
            image = self.client.images.get(layers[-1])
            if not image.tags:
                self.client.images.remove(image.id)
        except (APIError, ImageNotFound):  # shared with other images (build cache), or already gone
            pass

    def _image_env(self, job: Job, tag: str) -> dict[str, Any]:
        """The image's Python and packages, asked of the image itself: confined like the run (a wheel may
        ship a ``.pth`` file, which Python runs at start-up)."""
        box = Confined(
            self.client,
            tag,
            kind="env",
            timeout=min(job.timeout, 300.0),
            memory=job.memory,
            cpus=job.cpus,
            disk=job.disk,
            user=self._run_user(),
        )
        try:
            box.start("environment probe")
            res = box.exec(["python", "-c", ENV_SNIPPET], step="environment probe", tail=ENV_CAP)
        finally:
            box.remove()
        try:
            return jsonbudget.loads(res.stdout.value(), what="the image's environment") if res.rc == 0 else _NO_ENV
        except jsonbudget.JSONBudgetError:
            return _NO_ENV

    def _run_user(self) -> str:
        """The image's user, or ``nobody`` when it names none or root: never run somebody else's code as root."""
        user = (self.image.attrs.get("Config") or {}).get("User") or ""
        if user in ("", "root", "0", "0:0") or user.startswith(("root:", "0:")):
            return NOBODY
        return user

    # -- the run -------------------------------------------------------------------
    def run(self, job: Job) -> Rerun:
        config = self.image.attrs.get("Config") or {}
        workdir = config.get("WorkingDir") or ""
        if workdir != WORK_ROOT and not workdir.startswith(WORK_ROOT + "/"):
            raise ReproduceError(f"the image's working directory {workdir!r} is not under {WORK_ROOT}", step="run")
        entry = list(config.get("Entrypoint") or []) + list(config.get("Cmd") or [])
        result_path = workdir.rstrip("/") + "/" + job.result_rel
        what = f"the rerun's result file {job.result_rel}"
        box = Confined(
            self.client,
            self.tag,
            kind="run",
            timeout=job.timeout,
            memory=job.memory,
            cpus=job.cpus,
            disk=job.disk,
            home=HOME,
            user=self._run_user(),
            extra_labels={"cotk-repro.record": job.view.id or ""},
        )
        started_at = now_iso()
        try:
            box.start("run")
            uid, gid = box.ids()
            try:
                box.put(
                    HOME,
                    lambda tar: _add_tree(tar, job.code, WORK_ROOT.removeprefix(HOME + "/"), uid, gid),
                    job.workdir,
                    "run",
                )
            except ReproduceError as exc:
                if "no space left" not in exc.message.lower():
                    raise
                raise ReproduceError(
                    f"the checkout does not fit in the container's disk limit ({job.disk})",
                    step="run",
                    hint="raise it with --disk, e.g. --disk 4g",
                ) from None
            with (job.logs / "stdout.log").open("wb") as out, (job.logs / "stderr.log").open("wb") as err:
                res = box.exec(entry, workdir=workdir, step="run", sinks=(out, err), max_output=OUTPUT_CAP)
            err_tail = res.stderr.last_lines(20)
            if res.output_exceeded:
                raise ReproduceError(
                    f"the entry printed more than {OUTPUT_CAP / 1024**3:g} GiB to stdout and stderr and was stopped",
                    log=err_tail,
                    step="run",
                )
            if res.timed_out:
                raise ReproduceError(
                    f"the entry ran past the time limit of {job.timeout:g} s and was killed",
                    log=err_tail,
                    step="run",
                    hint="raise it with --timeout SECONDS",
                )
            if res.oom:
                raise ReproduceError(
                    f"the entry ran out of memory (limit {job.memory}) and was killed",
                    log=err_tail,
                    step="run",
                    hint="raise it with --memory, e.g. --memory 8g",
                )
            if res.rc != 0 and res.disk_full:
                raise ReproduceError(
                    f"the entry ran out of disk space (limit {job.disk} for its work folder and for /tmp) and failed",
                    log=err_tail,
                    step="run",
                    hint="raise it with --disk, e.g. --disk 4g",
                )
            if res.rc != 0 and res.read_only:
                raise ReproduceError(
                    "the entry tried to write outside its work folder and /tmp (the container's "
                    "root filesystem is read-only) and failed",
                    log=err_tail,
                    step="run",
                )
            if res.rc != 0:
                raise ReproduceError(
                    f"the entry {job.command.get('entry')} {describe_exit(res.rc or -1)} in the rerun",
                    log=err_tail,
                    step="run",
                )
            box.freeze()  # what the entry left running in the background stops before its result is read
            raw = box.read_file(result_path, RESULT_CAP, what)
        finally:
            box.remove()
        parsed = parse_result(raw, job, f"the rerun's {job.result_rel}")
        return Rerun(
            results=parsed["results"],
            data=parsed["data"],
            python=(self.env_info.get("python") or {}).get("version"),
            packages=self.env_info.get("packages", []),
            started_at=started_at,
            duration_s=res.seconds,
        )


def _add_tree(tar, folder, arcname: str, uid: int, gid: int) -> None:
    """``folder`` into ``tar`` as ``arcname``, owned by the user the entry runs as (it writes there)."""

    def owned(info):
        if not (info.isfile() or info.isdir() or info.issym()):
            return None
        info.uid, info.gid = uid, gid
        info.uname = info.gname = ""
        return info

    tar.add(str(folder), arcname=arcname, filter=owned)


class _Build(threading.Thread):
    """``docker build`` (classic builder, no network) read in a thread, so the caller can bound its time:
    ``stop()`` kills the build's running step container, which ends the build with an error."""

    def __init__(self, client, path: str, tag: str, base: str, key: str):
        super().__init__(daemon=True)
        self.client, self.path, self.tag, self.base, self.key = client, path, tag, base, key
        self.lines: list[str] = []
        self.layers: list[str] = []  # the image of each finished step (" ---> <id>")
        self.containers: list[str] = []  # the container of each RUN step (" ---> Running in <id>")
        self.step_start = 0
        self.error: str | None = None

    def run(self) -> None:
        try:
            stream = self.client.api.build(
                path=self.path,
                tag=self.tag,
                buildargs={"BASE_IMAGE": self.base},
                rm=True,
                forcerm=True,
                pull=False,
                decode=True,
                network_mode="none",
                labels={LABEL: "image", "cotk-repro.key": self.key},
            )
            for chunk in stream:
                for line in chunk.get("stream", "").splitlines():
                    if line.startswith("Step "):
                        self.step_start = len(self.lines)
                    if layer := _LAYER_LINE.match(line):
                        self.layers.append(layer.group(1))
                    if running := _RUNNING_LINE.match(line):
                        self.containers.append(running.group(1))
                    self.lines.append(line[:4000])
                    if len(self.lines) > 2 * BUILD_LINES:  # the build's output is kept to a tail
                        drop = len(self.lines) - BUILD_LINES
                        del self.lines[:drop]
                        self.step_start = max(0, self.step_start - drop)
                if "error" in chunk:
                    self.error = chunk.get("errorDetail", {}).get("message") or chunk["error"]
                    self.lines.append(self.error)
        except Exception as exc:
            self.error = _engine_message(exc)
            self.lines.append(self.error)

    def stop(self, grace: float = 30.0) -> None:
        """Kill the running step's container until the build thread ends (bounded by ``grace``)."""
        deadline = time.monotonic() + grace
        while self.is_alive() and time.monotonic() < deadline:
            for cid in list(self.containers):
                remove_quietly(self.client, cid)
            self.join(0.5)


def _engine_message(exc: Exception) -> str:
    detail = getattr(exc, "explanation", None) or str(exc)
    if isinstance(detail, bytes):
        detail = detail.decode("utf-8", "replace")
    return str(detail)[:300]


def _last_used(folder: Path, image: Any) -> float:
    """When a reproduction image was last used: the time of its cached environment (touched on each use)."""
    key = (image.labels or {}).get("cotk-repro.key", "")
    try:
        return (folder / f"{key}.json").stat().st_mtime if re.fullmatch(r"[0-9a-f]{16,128}", key) else 0.0
    except OSError:
        return 0.0


def leftover_containers(client=None) -> list[Any]:
    """Containers started by reproduce that still exist (for tests and `docker ps` hygiene)."""
    import docker

    client = client or docker.from_env()
    # one removed while listed (a reproduction beside this one ending) is no leftover: not a NotFound error
    return client.containers.list(all=True, filters={"label": LABEL}, ignore_removed=True)
