"""The ``docker`` runtime: build the recorded Dockerfile, rerun the entry in a locked-down container.

* build context: ``requirements.lock``, ``wheelhouse/`` (+ ``wheelhouse/local/``),
  ``code/`` (the recorded commit) and the recorded ``Dockerfile``; build arg
  ``BASE_IMAGE`` (``--base-image``); the ``RUN`` steps have no network (the install is
  offline from the wheelhouse); the failing step's log is shown when the build fails;
* the image is tagged ``cotk-repro-reproduce:<key>``, the key being a hash of the lock,
  the Dockerfile, the base image and what gets copied in (the code tree, local wheels):
  a second reproduce of the same thing skips the wheelhouse and the build;
* the container runs with no network, as the image's non-root user (never root),
  all capabilities dropped, no-new-privileges, a pids limit and the CPU, memory and
  wall-time limits; the result file is copied out; the container is removed in every
  case (also on Ctrl-C / SIGTERM).
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import tarfile
import time
import uuid
from typing import Any

from ..core.userconfig import cache_dir
from . import ReproduceError
from .job import ENV_SNIPPET, Job, Rerun, describe_exit, now_iso, parse_result

IMAGE_REPO = "cotk-repro-reproduce"
_LAYER_LINE = re.compile(r"^ ---> ([0-9a-f]{12,64})\s*$")
LABEL = "cotk-repro.reproduce"


def _engine_error(exc: Exception) -> ReproduceError:
    return ReproduceError(f"cannot reach a Docker engine ({type(exc).__name__}: {str(exc)[:160]})", step="docker",
                          hint="start Docker (or set DOCKER_HOST), or rerun with --runtime venv to rebuild the "
                               "environment in a virtual environment on this host")


class DockerRuntime:
    name = "docker"
    on_host = False
    description = "a Docker container without network, as a non-root user, with CPU/memory/time limits"

    def __init__(self) -> None:
        self.client: Any = None

    def connect(self):
        if self.client is None:
            try:
                import docker
                from docker.errors import DockerException
            except ImportError as exc:  # pragma: no cover - docker is a dependency
                raise ReproduceError("the docker Python package is not installed", step="docker") from exc
            try:
                client = docker.from_env(timeout=120)
                client.ping()
            except (DockerException, OSError) as exc:
                raise _engine_error(exc) from None
            except Exception as exc:  # requests errors from a half-configured engine
                raise _engine_error(exc) from None
            self.client = client
        return self.client

    # -- the image -----------------------------------------------------------------
    def image_key(self, job: Job, base: str | None) -> str:
        from .wheelhouse import local_identity, split_packages

        _index, local = split_packages(job.packages)
        payload = json.dumps({"lock": job.lock, "dockerfile": job.dockerfile, "base": base or "",
                              "tree": job.tree, "local": local_identity(local, job.tree)}, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()

    def prepare(self, job: Job) -> dict[str, Any]:
        from docker.errors import ImageNotFound

        client = self.connect()
        base = job.base_image
        key = self.image_key(job, base)
        tag = f"{IMAGE_REPO}:{key[:24]}"
        try:
            image = client.images.get(tag)
            job.steps.skip("wheel download", "image cached")
            job.steps.skip("image build", "cached")
        except ImageNotFound:
            wheelhouse = job.wheelhouse()
            with job.steps.step("image build", f"building the Docker image {tag}"):
                image = self._build(job, wheelhouse, base, tag, key)
        self.image = image
        self.tag = tag
        env_cache = cache_dir() / "images" / f"{key}.json"
        if env_cache.is_file():
            env = json.loads(env_cache.read_text())
        else:
            env = self._image_env(tag)
            env_cache.parent.mkdir(parents=True, exist_ok=True)
            env_cache.write_text(json.dumps(env))
        self.env_info = env
        return env

    def _build(self, job: Job, wheelhouse, base: str | None, tag: str, key: str):
        from docker.errors import APIError, BuildError, ImageNotFound

        client = self.client
        ctx = job.workdir / "context"
        ctx.mkdir(exist_ok=True)
        (ctx / "Dockerfile").write_text(job.dockerfile, encoding="utf-8")
        (ctx / "requirements.lock").write_text(job.lock, encoding="utf-8")
        wheelhouse.materialize(ctx / "wheelhouse")
        if job.code != ctx / "code":  # core exports the checkout into context/code
            raise ReproduceError("internal error: the checkout is not in the build context", step="image build")
        if base:
            try:
                client.images.get(base)
            except ImageNotFound:
                job.on_status(f"the base image {base} is not on this machine; Docker will try to pull it")
        log_path = job.logs / "build.log"
        lines: list[str] = []
        layers: list[str] = []  # the image of each finished step (" ---> <id>")
        step_start = 0
        error = None
        try:
            stream = client.api.build(path=str(ctx), tag=tag, buildargs={"BASE_IMAGE": base} if base else None,
                                      rm=True, forcerm=True, pull=False, decode=True, network_mode="none",
                                      labels={LABEL: "image", "cotk-repro.key": key})
            for chunk in stream:
                if "stream" in chunk:
                    for line in chunk["stream"].splitlines():
                        if line.startswith("Step "):
                            step_start = len(lines)
                        layer = _LAYER_LINE.match(line)
                        if layer:
                            layers.append(layer.group(1))
                        lines.append(line)
                if "error" in chunk:
                    error = chunk.get("errorDetail", {}).get("message") or chunk["error"]
                    lines.append(error)
        except (APIError, BuildError) as exc:
            error = str(exc)
            lines.append(error)
        finally:
            log_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        if error is not None:
            self._drop_layers(layers)
            failing = lines[step_start] if step_start < len(lines) and lines[step_start].startswith("Step ") else "the build"
            step_log = "\n".join(lines[step_start:][-30:])
            raise ReproduceError(f"building the Docker image failed at {failing.strip()[:160]}",
                                 log=step_log, step="image build",
                                 hint=f"full build log: {log_path}; --base-image picks another base image")
        try:
            return client.images.get(tag)
        except ImageNotFound:
            raise ReproduceError("the Docker build finished but produced no image", log="\n".join(lines[-20:]),
                                 step="image build") from None

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

    def _image_env(self, tag: str) -> dict[str, Any]:
        from docker.errors import APIError, NotFound

        name = f"cotk-repro-env-{uuid.uuid4().hex[:16]}"
        try:  # not containers.run(remove=True): an interrupt there would leave the container behind
            container = self.client.containers.create(tag, entrypoint=["python", "-c", ENV_SNIPPET], name=name,
                                                      network_mode="none", labels={LABEL: "env"})
            container.start()
            container.wait(timeout=120)
            raw = container.logs(stdout=True, stderr=False)
        finally:
            try:
                self.client.containers.get(name).remove(force=True)
            except (APIError, NotFound):
                pass
        try:
            return json.loads(raw.decode("utf-8"))
        except ValueError:
            return {"python": {"version": None}, "packages": []}

    # -- the run -------------------------------------------------------------------
    def run(self, job: Job) -> Rerun:
        import requests
        from docker.errors import APIError, NotFound

        client = self.client
        config = self.image.attrs.get("Config") or {}
        user = config.get("User") or ""
        kwargs: dict[str, Any] = {}
        if user in ("", "root", "0", "0:0"):
            kwargs["user"] = "65534:65534"  # never run somebody else's code as root
        workdir = config.get("WorkingDir") or "/"
        result_path = workdir.rstrip("/") + "/" + job.result_rel
        mem = job.memory
        container = None
        name = f"cotk-repro-run-{uuid.uuid4().hex[:16]}"  # found by name if interrupted inside create()
        started_at = now_iso()
        t0 = time.time()
        timed_out = False
        try:
            container = client.containers.create(
                self.tag, name=name, detach=True, network_mode="none",
                mem_limit=mem, memswap_limit=mem, nano_cpus=int(float(job.cpus) * 1e9), pids_limit=512,
                cap_drop=["ALL"], security_opt=["no-new-privileges"],
                labels={LABEL: "run", "cotk-repro.record": job.record["id"]}, **kwargs)
            container.start()
            try:
                status = container.wait(timeout=job.timeout)
                rc = int(status.get("StatusCode", -1))
            except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
                timed_out = True
                try:
                    container.kill()
                except APIError:
                    pass
                rc = -9
            duration = round(time.time() - t0, 3)
            out = container.logs(stdout=True, stderr=False)
            err = container.logs(stdout=False, stderr=True)
            (job.logs / "stdout.log").write_bytes(out)
            (job.logs / "stderr.log").write_bytes(err)
            err_tail = "\n".join(err.decode("utf-8", "replace").strip().splitlines()[-20:]) or None
            if timed_out:
                raise ReproduceError(f"the entry ran past the time limit of {job.timeout:g} s and was killed",
                                     log=err_tail, step="run", hint="raise it with --timeout SECONDS")
            container.reload()
            if container.attrs.get("State", {}).get("OOMKilled"):
                raise ReproduceError(f"the entry ran out of memory (limit {mem}) and was killed", log=err_tail,
                                     step="run", hint="raise it with --memory, e.g. --memory 8g")
            if rc != 0:
                raise ReproduceError(f"the entry {job.command.get('entry')} {describe_exit(rc)} in the rerun",
                                     log=err_tail, step="run")
            try:
                bits, _stat = container.get_archive(result_path)
                raw = _single_file(bits)
            except NotFound:
                raw = None
        finally:
            try:
                (container or client.containers.get(name)).remove(force=True)
            except (APIError, NotFound):
                pass
        parsed = parse_result(raw, job, f"the rerun's {job.result_rel}")
        return Rerun(results=parsed["results"], data=parsed["data"],
                     python=(self.env_info.get("python") or {}).get("version"),
                     packages=self.env_info.get("packages", []), started_at=started_at, duration_s=duration)


def _single_file(chunks) -> bytes | None:
    buf = io.BytesIO(b"".join(chunks))
    with tarfile.open(fileobj=buf) as tar:
        for member in tar:
            if member.isfile():
                fh = tar.extractfile(member)
                return fh.read() if fh else None
    return None


def leftover_containers(client=None) -> list[Any]:
    """Containers started by reproduce that still exist (for tests and `docker ps` hygiene)."""
    import docker

    client = client or docker.from_env()
    return client.containers.list(all=True, filters={"label": LABEL})
