"""Built-in runtimes for ``cotk-repro reproduce``: ``docker`` (default), ``venv``, ``local``.

A runtime is ``factory() -> runtime`` with ``name``, ``on_host`` (True when it runs the
entry on this host, which the command line only does when ``--runtime`` names it),
``description``, ``prepare(job) -> environment info`` and ``run(job) -> Rerun`` (see
:mod:`cotk_repro.reproduce.job`). The implementations are imported lazily.
"""

from ..hookspecs import hookimpl


def docker_runtime():
    """Build the runtime that reproduces a run inside a Docker container."""
    from ..reproduce.docker_runtime import DockerRuntime

    return DockerRuntime()


def venv_runtime():
    """Build the runtime that reproduces a run in a fresh virtual environment."""
    from ..reproduce.venv_runtime import VenvRuntime

    return VenvRuntime()


def local_runtime():
    """Build the runtime that reproduces a run in the current Python environment."""
    from ..reproduce.venv_runtime import LocalRuntime

    return LocalRuntime()


@hookimpl
def register_runtimes(register):
    """Register the built-in `docker`, `venv` and `local` reproduce runtimes."""
    register("docker", docker_runtime)
    register("venv", venv_runtime)
    register("local", local_runtime)
