"""The peer sacrebleu-mojo (PyPI, Python >= 3.12: "drop-in faster replacement for sacrebleu's BLEU and chrF",
a native Mojo kernel) for the benchmarks, timed in turn with ours so that both see the same machine load.

It is imported in this interpreter when it can be (run the benchmark with a Python 3.12 that has the project's
dependencies and ``sacrebleu-mojo``); otherwise ``--mojo-python PATH`` names a Python >= 3.12 that has it, and a
worker process there times one call per request, on data sent once. Either way one call is timed from its
Python entry point (``corpus_chrf`` / ``corpus_bleu``, its own encoding of the strings included) to its score.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

WORKER = r"""
import json, platform, sys, time
import sacrebleu_mojo
print(json.dumps({"python": platform.python_version(), "version": sacrebleu_mojo.__version__,
                  "native": bool(sacrebleu_mojo.backend_info().get("native_available"))}), flush=True)
data = json.loads(sys.stdin.readline())
for line in sys.stdin:
    name, kwargs = json.loads(line)
    fn = getattr(sacrebleu_mojo, name)
    t = time.perf_counter()
    score = fn(data["hyps"], [data["refs"]], **kwargs).score
    print(json.dumps([time.perf_counter() - t, score]), flush=True)
"""


class Mojo:
    """``time(name, **kwargs)`` -> (seconds, score on sacrebleu's 0-100 scale) of ``sacrebleu_mojo.<name>`` on the
    pairs given at construction; ``info``: its Python, version and whether the native kernel loaded."""

    def __init__(self, hyps: list[str], refs: list[str], python: Path | None = None):
        self.hyps, self.refs, self.proc = hyps, refs, None
        try:
            if python is not None:
                raise ImportError
            import sacrebleu_mojo

            self.module = sacrebleu_mojo
            self.info = {
                "python": platform.python_version(),
                "version": sacrebleu_mojo.__version__,
                "native": bool(sacrebleu_mojo.backend_info().get("native_available")),
                "where": "in process",
            }
        except ImportError:
            if python is None:
                raise
            self.module = None
            self.proc = subprocess.Popen(
                [str(python), "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
            )
            self.info = {**json.loads(self.proc.stdout.readline()), "where": f"worker {python}"}
            self.proc.stdin.write(json.dumps({"hyps": hyps, "refs": refs}) + "\n")
            self.proc.stdin.flush()

    def time(self, name: str, **kwargs: Any) -> tuple[float, float]:
        if self.module is not None:
            fn = getattr(self.module, name)
            t = time.perf_counter()
            score = fn(self.hyps, [self.refs], **kwargs).score
            return time.perf_counter() - t, score
        self.proc.stdin.write(json.dumps([name, kwargs]) + "\n")
        self.proc.stdin.flush()
        seconds, score = json.loads(self.proc.stdout.readline())
        return seconds, score

    def close(self) -> None:
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)


def open_mojo(hyps: list[str], refs: list[str], python: Path | None) -> Mojo | None:
    """The peer, or None (with a line saying why) when it is neither importable here nor named by ``python``."""
    try:
        return Mojo(hyps, refs, python)
    except ImportError:
        print("sacrebleu-mojo: not importable in this Python and no --mojo-python given: not measured")
    except (OSError, ValueError, json.JSONDecodeError) as e:
        print(f"sacrebleu-mojo: the worker did not start ({e})")
    return None


def load() -> str:
    """The 1-, 5- and 15-minute load averages and the CPU count."""
    a, b, c = os.getloadavg()
    return f"load average {a:.2f} {b:.2f} {c:.2f} on {os.cpu_count()} CPUs"
