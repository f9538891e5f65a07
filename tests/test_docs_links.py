"""Every file the code and the docs cite exists in a clone: no pointer outside the repository."""

from __future__ import annotations

import re

from conftest import REPO_ROOT


def test_no_reference_to_the_developers_shared_notes():
    pattern = re.compile(r"shared/notes|(?<![\w/])notes/bleu-semantics")
    offenders = []
    for path in [
        *REPO_ROOT.glob("cotk_repro/**/*.py"),
        *REPO_ROOT.glob("docs/*.md"),
        REPO_ROOT / "README.md",
        *REPO_ROOT.glob("benchmarks/*.py"),
        *REPO_ROOT.glob("plugins/*/README.md"),
    ]:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                offenders.append(f"{path.relative_to(REPO_ROOT)}:{n}: {line.strip()}")
    assert not offenders, offenders


def test_relative_links_in_docs_resolve():
    missing = []
    for path in [*REPO_ROOT.glob("docs/*.md"), REPO_ROOT / "README.md"]:
        for target in re.findall(r"\]\(([^)#:\s]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8")):
            if not (path.parent / target).exists():
                missing.append(f"{path.relative_to(REPO_ROOT)} -> {target}")
    assert not missing, missing
