"""Errors of the data layer: one clear sentence naming the file and line where it applies."""

from __future__ import annotations

from ..errors import CotkError


class DataError(CotkError):
    """A dataset folder, file or option that cannot be loaded."""
