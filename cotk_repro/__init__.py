"""cotk-repro: fast development and fair evaluation of text generation.

Hashed metrics and dataloaders, immutable run records, publish and one-command
reproduce. See the README and docs/spec.md for the contract.
"""

from ._version import __version__

__all__ = ["__version__", "save_result"]


def __getattr__(name):  # lazy: keep `import cotk_repro` cheap for the CLI start-up
    if name == "save_result":
        from .core.results import save_result

        return save_result
    raise AttributeError(name)
