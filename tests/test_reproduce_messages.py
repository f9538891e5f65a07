"""What a newcomer sees when SOURCE names nothing: one error sentence, exit 2, before any question or engine."""

from __future__ import annotations


def test_a_missing_folder_is_not_found_before_trust_is_asked(cli, tmp_path):
    res = cli("reproduce", str(tmp_path / "nonexistent"), "--runtime", "venv", cwd=tmp_path)
    assert res.returncode == 2, res
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1 and "was not found: there is no such folder" in errors[0], res
    assert "trust-remote-code" not in res.stderr and "Docker" not in res.stderr
    assert res.stdout.strip() == ""  # no "could not run" table for a source that names nothing


def test_an_unreachable_repository_is_one_sentence_without_gits_own_words(cli, tmp_path):
    bare_base = tmp_path / "forge"
    bare_base.mkdir()
    res = cli("reproduce", "nosuch/repo", cwd=tmp_path, env={"COTK_REPRO_GIT_BASE": str(bare_base)})
    assert res.returncode == 2, res
    assert "the git repository nosuch/repo was not found or is not accessible" in res.stderr
    assert "fatal:" not in res.stderr and "steps:" not in res.stderr and res.stdout.strip() == "", res
