"""Errors that the command line turns into one clear sentence and an exit status.

Exit statuses follow docs/spec.md section 2: 0 success, 1 negative outcome (e.g. "did not
reproduce"), 2 usage or environment errors.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_NEGATIVE = 1
EXIT_ERROR = 2


class CotkError(Exception):
    """An error the user can act on. Its message is one sentence, shown without traceback."""

    exit_code = EXIT_ERROR

    def __init__(self, message: str, *, hint: str | None = None, log: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        #: optional tail of a log (e.g. a failed build step) shown after the message
        self.log = log

    def __str__(self) -> str:  # pragma: no cover - trivial
        return self.message


class ConfigError(CotkError):
    """Invalid project or user configuration."""


class PluginError(CotkError):
    """A plugin is broken or two plugins clash."""


class CaptureError(CotkError):
    """The code or environment could not be captured (not a repo, dirty tree, ...)."""


class RunError(CotkError):
    """The entry script failed or its result file is unusable."""


class RecordError(CotkError):
    """A record is missing, ambiguous or invalid."""


class CotkWarning(UserWarning):
    """Something the user should know that does not stop the work (a metric scored text its tokenizer drops).

    Library code warns with :func:`warnings.warn`; the command line prints it as one ``Warning:`` line.
    """
