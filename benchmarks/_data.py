"""Where the benchmarks find the full-size Texygen corpora, and what they say when those are missing.

The repository holds only 2,000-line subsets (tests/fixtures/texygen); benchmarks measure the full sets.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = Path(os.environ.get("COTK_REPRO_TEXYGEN_DATA", ROOT.parent / "shared" / "data" / "texygen"))
SUBSET = ROOT / "tests" / "fixtures" / "texygen"
WHERE = (
    "get them from https://github.com/geek-ai/Texygen: data/image_coco.txt as coco_train.txt, "
    "data/testdata/test_coco.txt as coco_test.txt, docs/instances/*.txt as instances/"
)


def add_data_option(ap: argparse.ArgumentParser) -> None:
    """``--data FOLDER``: the Texygen corpora (coco_train.txt, coco_test.txt, instances/*.txt)."""
    ap.add_argument(
        "--data",
        type=Path,
        default=DEFAULT,
        help=f"folder with the full Texygen corpora: coco_train.txt, coco_test.txt, instances/*.txt "
        f"(default: $COTK_REPRO_TEXYGEN_DATA or {DEFAULT}); {WHERE}",
    )


def require(folder: Path, *names: str) -> None:
    """Exit 2 with one sentence saying where to get the data when a file is missing from ``folder``."""
    missing = [n for n in names if not (folder / n).exists()]
    if missing:
        sys.exit(
            f"error: {', '.join(missing)} not found in {folder}; this benchmark reads the full-size Texygen "
            f"corpora, which are not in the repository: {WHERE}, then pass --data FOLDER (or set "
            f"COTK_REPRO_TEXYGEN_DATA); --data {os.path.relpath(SUBSET)} runs it on the 2,000-line subset."
        )
