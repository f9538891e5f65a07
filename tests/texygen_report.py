"""The Texygen example's full comparison (examples/texygen/benchmark.toml: six systems, 22 columns), computed once
per test process and shared read-only by the tests that check it (test_compare.py: the values, hashes and ranks
against the committed reference report; test_compare_paper.py: report.tex, the figures, the HTML).

Each of them ran the same ``compare`` on the same config on its own (about 10 s of CPU each); the tests that use
it carry the xdist group :data:`GROUP`, so that under ``--dist loadgroup`` they share one worker and one run.
The process pool's path on this config stays covered by
test_compare.py::test_texygen_reference_report_matches_a_fresh_run_for_one_system (``jobs=2``), and the pool
against one process by test_compare.py::test_cli_json_help_and_jobs_agree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
CONFIG = REPO_ROOT / "examples" / "texygen" / "benchmark.toml"
GROUP = "texygen-reference-report"
#: the mark for every test that reads the shared report
shares_the_report = pytest.mark.xdist_group(GROUP)

_REPORT: tuple[Any, list[Path], Path] | None = None


def texygen_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, list[Path], Path]:
    """``(result, files, out)`` of ``compare(CONFIG, out=out, jobs=1)``, run on the first call in this process;
    ``out`` is a session temporary folder. Readers never write into ``out``."""
    global _REPORT
    if _REPORT is None:
        from cotk_repro.compare import compare

        out = tmp_path_factory.mktemp("texygen-report")
        result, files = compare(CONFIG, out=out, jobs=1)
        _REPORT = (result, list(files), out)
    return _REPORT
