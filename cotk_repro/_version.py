"""cotk-repro's version: one constant, in a module of its own so that every package can read it without
importing the package root (which re-exports the public API, :mod:`cotk_repro`)."""

__version__ = "0.1.0"
