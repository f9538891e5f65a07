"""The Docker engine as the reproducer uses it: one connection, one error mapping, one way to remove.

Every call to the engine runs under :func:`engine_step`, so that whatever the engine
answers (an API error, a refused start, a dropped connection) becomes a ``could not
run`` verdict naming the step and the engine's own message, never an "unexpected" error. The confinement
of the containers that run somebody else's code is :mod:`.container`'s.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from . import ReproduceError

#: label on every container and image the reproducer makes (value: image, env, run, build)
LABEL = "cotk-repro.reproduce"
#: the user somebody else's code runs as when the image does not name a non-root one
NOBODY = "65534:65534"


def _engine_error(exc: Exception) -> ReproduceError:
    return ReproduceError(
        f"cannot reach a Docker engine ({type(exc).__name__}: {str(exc)[:160]})",
        step="docker",
        hint="start Docker (or set DOCKER_HOST), or rerun with --runtime venv to rebuild the "
        "environment in a virtual environment on this host",
    )


def connect(timeout: int = 120):
    """A pinged Docker client, or a ReproduceError saying there is no engine."""
    try:
        import docker
        from docker.errors import DockerException
    except ImportError as exc:  # pragma: no cover - docker is a dependency
        raise ReproduceError("the docker Python package is not installed", step="docker") from exc
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except (DockerException, OSError) as exc:
        raise _engine_error(exc) from None
    except Exception as exc:
        raise _engine_error(exc) from None
    return client


@contextmanager
def engine_step(step: str) -> Iterator[None]:
    """Map the engine's failures inside the block to a ReproduceError naming ``step``."""
    import requests
    from docker.errors import DockerException

    try:
        yield
    except DockerException as exc:
        detail = getattr(exc, "explanation", None) or str(exc)
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise ReproduceError(f"the Docker engine failed at {step}: {str(detail)[:300]}", step=step) from None
    except requests.exceptions.RequestException as exc:
        raise ReproduceError(
            f"the Docker engine failed at {step}: {type(exc).__name__}: {str(exc)[:200]}", step=step
        ) from None


def remove_quietly(client, name_or_container) -> None:
    """Force-remove a container (by object or name); gone already is fine."""
    from docker.errors import APIError, NotFound

    try:
        container = (
            client.containers.get(name_or_container) if isinstance(name_or_container, str) else name_or_container
        )
        container.remove(force=True)
    except (APIError, NotFound):
        pass
    except Exception:
        pass


def list_images(client, *, filters: dict | None = None) -> list:
    """The engine's images (``filters`` as in ``docker images --filter``), like docker's ``images.list``, except
    that an image removed between the engine's list and its inspection (a reproduction beside this one removing
    its own) is left out instead of failing the listing with ImageNotFound."""
    from docker.errors import NotFound

    found = []
    for summary in client.api.images(filters=filters):
        try:
            found.append(client.images.get(summary["Id"]))
        except NotFound:
            continue
    return found
