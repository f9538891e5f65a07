"""Publishing records: the publish targets (git records ref, dashboard), GitHub repository creation.

Reading and writing the records ref and the dashboard client live one layer down, in :mod:`cotk_repro.remote`
(``reproduce`` reads through them too).

* :mod:`.github` creates a missing GitHub repository through the REST API when
  ``GITHUB_TOKEN`` is set;
* :mod:`.targets` are the built-in publish targets;
* :mod:`.core` is ``cotk-repro publish``: git target then dashboard target.
"""

from __future__ import annotations

from ..errors import CotkError


class PublishError(CotkError):
    """Publishing failed; the local record is untouched."""

    def __init__(self, message: str, *, hint: str | None = None, log: str | None = None, steps=None):
        super().__init__(message, hint=hint, log=log)
        #: what was done before the failure (list of step dicts), for the command line to show
        self.steps = list(steps or [])
