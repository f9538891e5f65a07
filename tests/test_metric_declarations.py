"""Every metric's hash settings and signature come from one declaration (cotk_repro/metrics/declaration.py).

* Run on every pinned case (tests/test_metric_pins.py), each value's signature is the one its declaration renders,
  and walking the declaration, every hashed setting is shown in the signature and every shown field is hashed,
  unless the setting names one of the documented reasons (``declaration.EXCEPTIONS``, listed in
  docs/metrics.md).
* No metric module, built-in or plugin, builds a result entry or a signature by hand.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_metric_pins import CASES, _run, missing_plugin

from cotk_repro.core.results import SIGNATURE_SUFFIX
from cotk_repro.metrics import declaration
from cotk_repro.metrics.declaration import COUNTED_INPUTS, EXCEPTIONS, UNSET, Declaration, Setting, with_settings

ROOT = Path(__file__).resolve().parents[1]
#: each pinned case; a first-party plugin's metric skips, naming the plugin, where that plugin is not installed
PARAMS = [
    pytest.param(c[0], marks=pytest.mark.skip(reason=why)) if (why := missing_plugin(c[1])) else c[0] for c in CASES
]


@pytest.fixture(scope="module")
def declared() -> dict[str, list[tuple[str, Declaration, dict[str, Any]]]]:
    """For each pinned case: (result key, its declaration, the result dict)."""
    seen: list[tuple[str, Declaration]] = []
    original = Declaration.entry

    def recording(self: Declaration, key: str, value: float, hasher: Callable[[dict[str, Any]], str]) -> dict[str, Any]:
        seen.append((key, self))
        return original(self, key, value, hasher)

    mp = pytest.MonkeyPatch()
    mp.setattr(Declaration, "entry", recording)
    out = {}
    try:
        for case, metric, options, kind in CASES:
            if missing_plugin(metric):  # its cases skip (PARAMS)
                continue
            seen.clear()
            result = _run(metric, options, kind)
            out[case] = [(key, decl, result) for key, decl in seen]
    finally:
        mp.undo()
    return out


@pytest.mark.parametrize("case", PARAMS)
def test_every_value_comes_from_its_declaration(case: str, declared: dict[str, Any]) -> None:
    entries = declared[case]
    result = entries[0][2] if entries else {}
    values = {k for k, v in result.items() if isinstance(v, float)}
    assert values and values == {key for key, _, _ in entries}
    for key, decl, res in entries:
        assert res[key + SIGNATURE_SUFFIX] == decl.signature()


@pytest.mark.parametrize("case", PARAMS)
def test_hashed_and_shown_settings_match_but_for_documented_reasons(case: str, declared: dict[str, Any]) -> None:
    for key, decl, _ in declared[case]:
        hashed = decl.hashed()
        for s in decl.settings:
            if s.key is None or s.abbrev is None:
                assert s.why in EXCEPTIONS, (key, s)
            if s.key is not None and s.hashes:
                assert hashed[s.key] == s.value
        shown = [f.split(":", 1)[0] for f in decl.signature().split("|")[1:]]
        assert shown[-1] == "v" and hashed["version"] == decl.version
        # what the signature leaves out is a declared default, never a forgotten setting
        for s in decl.settings:
            if s.abbrev is not None and s.abbrev not in shown:
                assert s.elide is not UNSET and s.value == s.elide, (key, s)


def test_every_reason_is_documented() -> None:
    doc = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    for reason in EXCEPTIONS:
        assert reason in doc, reason


def _metric_modules() -> list[Path]:
    paths = sorted((ROOT / "cotk_repro" / "metrics").glob("*.py"))
    for plugin in ("cotk-repro-lm", "cotk-repro-texygen", "cotk-repro-summarizers", "cotk-repro-example"):
        paths += sorted((ROOT / "plugins" / plugin).glob("cotk_repro_*/*.py"))
    return [p for p in paths if p.name not in ("declaration.py", "base.py")]


def test_no_metric_builds_a_result_entry_or_a_signature_by_hand() -> None:
    offenders = []
    for path in _metric_modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if name in ("result_entry", "signature") and not (
                    isinstance(node.func, ast.Attribute)
                    and name == "signature"
                    and getattr(node.func.value, "id", "") in ("inspect", "decl", "self")
                ):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def test_a_one_sided_setting_needs_a_documented_reason() -> None:
    with pytest.raises(ValueError, match="one side only"):
        Setting("kept", 1, None)
    with pytest.raises(ValueError, match="one side only"):
        Setting.signature_only("n", 3, why="because")
    assert Setting.signature_only("refs", 2, why=COUNTED_INPUTS).abbrev == "refs"


def test_a_name_declared_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="names n twice"):
        Declaration("m", "1", [Setting("a", 1, "n"), Setting("b", 2, "n")])
    with pytest.raises(ValueError, match="names version twice"):
        Declaration("m", "1", [Setting("version", 2, "ver")])


def test_elided_defaults_stay_in_the_hash_and_hash_elided_defaults_in_the_signature() -> None:
    decl = Declaration(
        "m",
        "2",
        [
            Setting("normalize", "none", "norm", elide="none"),
            Setting("rule", "fair", "rule", hash_elide="fair"),
            Setting("smoothing", "method3", "smooth", shown="m3"),
        ],
    )
    assert decl.hashed() == {"normalize": "none", "smoothing": "method3", "version": "2"}
    assert decl.signature() == "m|rule:fair|smooth:m3|v:2"
    other = with_settings(decl, [Setting("weights", [0.5, 0.5], "w")], name="m-2")
    assert other.signature() == "m-2|rule:fair|smooth:m3|w:0.5,0.5|v:2"
    assert declaration.FIXED_BY_VERSION in EXCEPTIONS
