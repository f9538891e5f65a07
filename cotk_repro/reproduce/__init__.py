"""``cotk-repro reproduce SOURCE``: fetch a published record and its code, rebuild, rerun, diff.

* :mod:`.source` turns SOURCE (``user/repo``, a git URL, a local path, a dashboard
  record URL) into a git location;
* :mod:`.fetch` reads the records ref and checks the recorded commit out (no link
  out of the checkout); :mod:`.paths` keeps entry, cwd and result file inside it;
* :mod:`.lock` validates the recorded packages (name + exact version, nothing else);
* :mod:`.wheelhouse` downloads binary wheels on the host into a cache (:mod:`.sdist`
  fetches an sdist without preparing it); what needs a build is built by
  :mod:`.sandbox` in a container without network (:mod:`.engine`: the Docker engine);
* :mod:`.docker_runtime` and :mod:`.venv_runtime` (which also holds ``LocalRuntime``) rerun the entry
  (registered as runtimes ``docker``, ``venv``, ``local`` through the plugin hooks);
* :mod:`.core` runs the steps, asks for consent before a host runtime runs anything,
  makes the verdict (contract: the reproduction verdict JSON) and submits it to the
  user's own dashboard.

Everything that comes from the record or the reproduced repository is data until it
is inside the sandbox (docs/reproduce.md, "Threat model").
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
