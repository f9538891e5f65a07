"""Per-user folders come from platformdirs and stay where earlier versions put them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CODE = "from cotk_repro.core import userconfig as u; print(u.config_dir()); print(u.data_dir()); print(u.cache_dir())"


def dirs(home: Path, **env: str) -> list[str]:
    base = {"HOME": str(home), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, env={**base, **env}, cwd=home)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_linux_defaults_are_the_folders_used_before(tmp_path):
    if sys.platform != "linux":
        return
    assert dirs(tmp_path) == [
        str(tmp_path / ".config/cotk-repro"),
        str(tmp_path / ".local/share/cotk-repro"),
        str(tmp_path / ".cache/cotk-repro"),
    ]


def test_overrides_and_xdg_variables_win(tmp_path):
    got = dirs(
        tmp_path,
        XDG_CONFIG_HOME=str(tmp_path / "c"),
        XDG_DATA_HOME=str(tmp_path / "d"),
        XDG_CACHE_HOME=str(tmp_path / "k"),
    )
    assert got == [str(tmp_path / "c/cotk-repro"), str(tmp_path / "d/cotk-repro"), str(tmp_path / "k/cotk-repro")]
    got = dirs(
        tmp_path,
        COTK_REPRO_CONFIG_DIR=str(tmp_path / "cfg"),
        COTK_REPRO_CACHE=str(tmp_path / "cache"),
        XDG_CONFIG_HOME=str(tmp_path / "c"),
    )
    assert got[0] == str(tmp_path / "cfg") and got[2] == str(tmp_path / "cache")
