"""The plugin's one error type, importable without torch (the metric classes catch it and are loaded by every
command that lists metrics)."""

from __future__ import annotations

from cotk_repro.errors import CotkError


class OracleError(CotkError):
    """Oracle settings that cannot work (one sentence)."""
