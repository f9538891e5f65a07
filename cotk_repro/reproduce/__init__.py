"""``cotk-repro reproduce SOURCE``: fetch a published record and its code, rebuild, rerun, diff.

* :mod:`.source` turns SOURCE (``user/repo``, a git URL, a local path, a dashboard
  record URL) into a git location;
* :mod:`.fetch` reads the records ref and checks the recorded commit out;
* :mod:`.wheelhouse` downloads the recorded packages on the host into a cache and
  builds wheels for editable / local installs;
* :mod:`.docker_runtime` and :mod:`.venv_runtime` (which also holds ``LocalRuntime``) rerun the entry
  (registered as runtimes ``docker``, ``venv``, ``local`` through the plugin hooks);
* :mod:`.core` runs the steps and makes the verdict (contract: the reproduction
  verdict JSON).
"""

from __future__ import annotations

from ..errors import CotkError


class ReproduceError(CotkError):
    """The reproduction could not run (verdict ``could not run``, exit 2).

    ``step`` names the failing step (clone, wheel download, image build, run...);
    ``log`` holds the tail of that step's log.
    """

    def __init__(self, message: str, *, hint: str | None = None, log: str | None = None, step: str | None = None):
        super().__init__(message, hint=hint, log=log)
        self.step = step
