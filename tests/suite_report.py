"""The suite's own timing: every test's duration, written to the test artifacts on every run.

Registered by tests/conftest.py (a plugin object, so it sees every test, the plugins' tests included, and under
pytest-xdist it runs in the controller only, where every worker's reports arrive). At the end of a run it writes
``$COTK_REPRO_TEST_ARTIFACTS/durations.json`` (each test's setup + call + teardown seconds, its outcome and the
worker that ran it, the CPU seconds it took — its own process's and the child processes' it waited for, so a
test whose seconds are mostly waiting shows it —, the run's wall time and how many workers ran it), moves the earlier run's file to
``durations.previous.json``, and prints the 25 slowest tests. ``benchmarks/suite_time.py`` compares a run with the
committed ``benchmarks/suite-durations.json``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

SLOWEST_SHOWN = 25
CPU = "cpu_seconds"


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class CpuMeter:
    """In the process that runs the tests (each xdist worker, or the one pytest): each test's CPU seconds, setup to
    teardown, carried to the reporting process on the teardown report."""

    def __init__(self) -> None:
        self.started: dict[str, float] = {}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self.started[item.nodeid] = _cpu()
        yield
        self.started.pop(item.nodeid, None)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        if call.when == "teardown" and item.nodeid in self.started:
            outcome.get_result().user_properties.append((CPU, round(_cpu() - self.started[item.nodeid], 3)))


class SuiteReport:
    def __init__(self, config) -> None:
        self.config = config
        self.started = time.time()
        self.tests: dict[str, dict] = {}

    def pytest_runtest_logreport(self, report) -> None:
        nodeid = report.nodeid.split("@", 1)[0]  # pytest-xdist's loadgroup adds "@group"
        entry = self.tests.setdefault(nodeid, {"seconds": 0.0, "outcome": "passed"})
        entry["seconds"] += report.duration
        for key, value in getattr(report, "user_properties", ()):
            if key == CPU:
                entry[CPU] = value
        keywords = getattr(report, "keywords", {})
        entry["slow"] = "slow" in keywords
        if "measured_slow" in keywords:  # slow by the last run's measurement, not by its file's mark
            entry["measured_slow"] = True
        worker = getattr(report, "node", None)
        if worker is not None:
            entry["worker"] = getattr(worker, "gateway", None) and worker.gateway.id
        if report.failed:
            entry["outcome"] = "failed" if report.when == "call" else "error"
        elif report.skipped and entry["outcome"] == "passed":
            entry["outcome"] = "skipped"

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.tests:
            return
        wall = time.time() - self.started
        workers = int(getattr(self.config.option, "numprocesses", 0) or 0)
        data = {
            "wall_seconds": round(wall, 1),
            "workers": workers,
            "cpu_seconds": round(sum(v.get(CPU, 0.0) for v in self.tests.values()), 1),
            "tests": {k: {**v, "seconds": round(v["seconds"], 3)} for k, v in sorted(self.tests.items())},
        }
        artifacts = Path(
            os.environ.get("COTK_REPRO_TEST_ARTIFACTS", Path(__file__).resolve().parents[1] / "test-artifacts")
        )
        try:
            artifacts.mkdir(parents=True, exist_ok=True)
            out = artifacts / "durations.json"
            if out.is_file():
                out.replace(artifacts / "durations.previous.json")
            out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        except OSError as exc:
            terminalreporter.write_line(f"(durations not written: {exc})")
            out = None
        slowest = sorted(self.tests.items(), key=lambda kv: -kv[1]["seconds"])[:SLOWEST_SHOWN]
        total = sum(v["seconds"] for v in self.tests.values())
        quick = sum(v["seconds"] for v in self.tests.values() if not v.get("slow"))
        cpu = data["cpu_seconds"]
        terminalreporter.section(f"the {len(slowest)} slowest tests (setup + call + teardown)")
        for nodeid, v in slowest:
            mark = "slow" if v.get("slow") else "    "
            spent = f"{v[CPU]:6.1f} cpu" if CPU in v else " " * 10
            terminalreporter.write_line(f"{v['seconds']:8.1f} s {spent}  {v['outcome']:<7} {mark} {nodeid}")
        terminalreporter.write_line(
            f"{len(self.tests)} tests, {total / 60:.1f} min of test time ({quick / 60:.1f} min not marked slow)"
            + (f", {cpu / 60:.1f} min of CPU" if cpu else "")
            + f" in {wall / 60:.1f} min wall"
            + (f" on {workers} workers" if workers else "")
            + (f"; every test's time: {out}" if out else "")
        )


#: set in the process that reports, and so seen by every pytest a test starts (a test in a fresh interpreter, the
#: docs harness): those report nothing, else the last nested run's one test would replace the suite's file
NESTED = "COTK_REPRO_SUITE_REPORT_BY"


def register(config) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: measures, and the controller collects every report
        config.pluginmanager.register(CpuMeter(), "cotk-repro-cpu-meter")
        return
    if os.environ.get(NESTED) or config.pluginmanager.has_plugin("cotk-repro-suite-report"):
        return
    if getattr(config.option, "numprocesses", None) in (None, 0):  # this process runs the tests itself
        config.pluginmanager.register(CpuMeter(), "cotk-repro-cpu-meter")
    os.environ[NESTED] = str(os.getpid())
    config.pluginmanager.register(SuiteReport(config), "cotk-repro-suite-report")
