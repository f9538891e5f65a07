"""``[run] imports``: the modules a project's entry imports that must be installed, checked before a run.

A generated project (``cotk-repro init --template lm-gru``) needs torch, which cotk-repro never installs; without
this check its entry would fail inside the run and leave a failed record holding a ``ModuleNotFoundError``
traceback. :func:`check_imports` looks each name up with :func:`importlib.util.find_spec` (top-level names only,
so nothing is imported) in this interpreter, the one that runs the entry, and in the entry's folder (the entry's
``sys.path[0]``).
"""

from __future__ import annotations

import importlib.util
import sys
from importlib.machinery import PathFinder
from pathlib import Path

from ..errors import RunError

#: the CPU build of torch (what cotk-repro's own setup installs; a CUDA build: see pytorch.org)
TORCH_CPU = "pip install torch --index-url https://download.pytorch.org/whl/cpu"


def missing_modules(names: list[str], entry_folder: Path) -> list[str]:
    """The names among ``names`` that the entry could not import: neither on this interpreter's path nor in
    ``entry_folder``."""
    return [
        name
        for name in names
        if importlib.util.find_spec(name) is None and PathFinder.find_spec(name, [str(entry_folder)]) is None
    ]


def check_imports(names: list[str], entry_folder: Path, where: str) -> None:
    """Raise one RunError naming the modules of ``names`` (from ``where``, the config file) that are missing."""
    missing = missing_modules(names, entry_folder)
    if not missing:
        return
    what = f"the module {missing[0]}" if len(missing) == 1 else f"the modules {', '.join(missing)}"
    verb = "is" if len(missing) == 1 else "are"
    others = [m.replace("_", "-") for m in missing if m != "torch"]
    install = " and ".join(
        ([f"{TORCH_CPU} (the CPU build; a CUDA one: see pytorch.org)"] if "torch" in missing else [])
        + ([f"pip install {' '.join(others)}"] if others else [])
    )
    raise RunError(
        f"this project's entry needs {what} ({where} [run] imports), which {verb} not installed for "
        f"{sys.executable}; nothing was run",
        hint=install,
    )
