"""Publishing records: the git records ref, the dashboard client, GitHub repository creation.

* :mod:`.gitrecords` builds commits on a dedicated ref (default
  ``refs/heads/cotk-repro-records``) with git plumbing and a temporary index, so the
  user's branches, index and work tree are never touched;
* :mod:`.dashboard` is the HTTP client of the dashboard API (retries, backoff, timeouts);
* :mod:`.github` creates a missing GitHub repository through the REST API when
  ``GITHUB_TOKEN`` is set;
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
