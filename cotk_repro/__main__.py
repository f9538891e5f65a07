"""``python -m cotk_repro``: the command line."""

from .cli import launch

if __name__ == "__main__":
    launch()
