"""`cotk-repro --help` from the help cache: the same bytes as a render, without Typer, and never stale.

The plugin here is a real distribution on the import path (a dist-info folder with ``entry_points.txt``), so
that installing it, editing it and adding another go through the same discovery a user's plugins do.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cotk_repro.cli import asks_for_help, help_cache
from cotk_repro.plugins import ENTRY_POINT_GROUP

# the console script's entry, then whether Typer was imported (a replay never imports it)
LAUNCH = (
    "import sys\nfrom cotk_repro.cli import launch\nsys.argv[0] = 'cotk-repro'\ntry:\n    launch()\n"
    "except SystemExit as exc:\n    code = exc.code\nelse:\n    code = 0\n"
    "sys.stderr.write(f'\\ntyper={\"typer\" in sys.modules} code={code}\\n')\n"
)

PLUGIN = '''
from cotk_repro.hookspecs import hookimpl


@hookimpl
def register_commands(cli):
    @cli.command("{name}")
    def _cmd():
        """{doc}"""
'''


def add_plugin(site: Path, name: str, doc: str) -> Path:
    """A distribution ``name`` on ``site`` whose plugin adds the command ``name`` with help ``doc``."""
    module = site / f"{name.replace('-', '_')}.py"
    module.write_text(PLUGIN.format(name=name, doc=doc))
    info = site / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{name} = {module.stem}\n")
    return module


def cli(args: list[str], site: Path, cache: Path, **env: str) -> tuple[str, bool, str]:
    """Run the console script's entry on ``args``: (stdout, whether Typer was imported, exit code)."""
    full = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
        "XDG_CACHE_HOME": str(cache),
        "COLUMNS": "100",
        **env,
    }
    full.pop("COTK_REPRO_CACHE", None)
    proc = subprocess.run(
        [sys.executable, "-c", LAUNCH, *args], capture_output=True, text=True, env=full, cwd=site.parent
    )
    last = proc.stderr.strip().splitlines()[-1]
    return proc.stdout, "typer=True" in last, last.split("code=")[1]


def touch_later(path: Path) -> None:
    """Move the modification time on, as an edit a second later would (file systems with coarse clocks)."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))


def test_second_help_is_replayed_byte_for_byte_without_typer(tmp_path):
    site, cache = tmp_path / "site", tmp_path / "cache"
    site.mkdir()
    add_plugin(site, "toy-cmd", "Toy help, first edition.")
    first, typer_first, code = cli(["--help"], site, cache)
    assert typer_first and code == "0" and "toy-cmd" in first and "Toy help, first edition." in first
    second, typer_second, code = cli(["--help"], site, cache)
    assert (second, typer_second, code) == (first, False, "0")
    uncached, typer_uncached, _ = cli(["--help"], site, cache, COTK_REPRO_HELP_CACHE="0")
    assert uncached == first and typer_uncached
    # a subcommand's help is its own entry
    sub, typer_sub, _ = cli(["run", "--help"], site, cache)
    assert typer_sub and "--allow-dirty" in sub and "toy-cmd" not in sub
    assert cli(["run", "--help"], site, cache)[:2] == (sub, False)


def test_editing_or_installing_a_plugin_renders_anew(tmp_path):
    site, cache = tmp_path / "site", tmp_path / "cache"
    site.mkdir()
    module = add_plugin(site, "toy-cmd", "Toy help, first edition.")
    cli(["--help"], site, cache)
    assert cli(["--help"], site, cache)[1] is False  # cached
    module.write_text(module.read_text().replace("first edition", "second edition"))
    touch_later(module)
    text, typer_used, _ = cli(["--help"], site, cache)
    assert typer_used and "Toy help, second edition." in text and "first edition" not in text
    add_plugin(site, "other-cmd", "Another plugin's command.")
    text, typer_used, _ = cli(["--help"], site, cache)
    assert typer_used and "other-cmd" in text and "Another plugin's command." in text
    # a different terminal width is a different entry, not the 100-column text
    wide, typer_used, _ = cli(["--help"], site, cache, COLUMNS="140")
    assert typer_used and max(map(len, wide.splitlines())) > 100


def test_only_help_is_remembered(tmp_path, capsys):
    """Arguments after `--` belong to the entry; output with a warning on stderr, or not help, is never kept."""
    assert asks_for_help(["run", "--help"]) and asks_for_help([]) and asks_for_help(["-h"])
    assert not asks_for_help(["run", "--", "--help"]) and not asks_for_help(["run", "-q", "--", "-h"])
    os.environ["XDG_CACHE_HOME"] = str(tmp_path / "cache")  # conftest's process: restored below
    old = sys.stdout, sys.stderr
    try:
        for args, out, err, code in (
            (["a", "--help"], "Usage: a\n", "Warning: plugin x is broken\n", 0),
            (["b", "--help"], "record 1\n", "", 0),
            (["c", "--help"], "Usage: c\n", "", 2),
        ):
            try:
                with help_cache.recording(args):
                    sys.stdout.write(out)
                    sys.stderr.write(err)
                    raise SystemExit(code)
            except SystemExit:
                pass
            assert not help_cache.replay(args)
        try:
            with help_cache.recording(["d", "--help"]):
                sys.stdout.write("\x1b[1m Usage:\x1b[0m d\n")
                raise SystemExit(0)
        except SystemExit:
            pass
        capsys.readouterr()
        assert help_cache.replay(["d", "--help"]) and capsys.readouterr().out == "\x1b[1m Usage:\x1b[0m d\n"
    finally:
        sys.stdout, sys.stderr = old
        os.environ.pop("XDG_CACHE_HOME", None)


def test_a_plugin_reinstalled_at_the_same_version_with_another_command_renders_anew(tmp_path):
    """The dist-info keeps its name; its entry_points.txt now names a second plugin module (found in review)."""
    site, cache = tmp_path / "site", tmp_path / "cache"
    site.mkdir()
    add_plugin(site, "toy-cmd", "Toy help.")
    cli(["--help"], site, cache)
    assert cli(["--help"], site, cache)[1] is False
    (site / "bar_plugin.py").write_text(PLUGIN.format(name="bar-cmd", doc="Bar's command."))
    eps = site / "toy_cmd-0.1.dist-info" / "entry_points.txt"
    eps.write_text(eps.read_text() + "bar = bar_plugin\n")
    touch_later(eps)
    text, typer_used, _ = cli(["--help"], site, cache)
    assert typer_used and "bar-cmd" in text


def test_colour_switches_are_part_of_the_key_and_a_closed_pipe_is_quiet(tmp_path, monkeypatch):
    plain = help_cache.key(["--help"])
    for name in ("PY_COLORS", "FORCE_COLOR", "NO_COLOR", "GITHUB_ACTIONS", "TTY_COMPATIBLE"):
        monkeypatch.setenv(name, "1")
        assert help_cache.key(["--help"]) != plain, name
        monkeypatch.delenv(name)
    site, cache = tmp_path / "site", tmp_path / "cache"
    site.mkdir()
    cli(["--help"], site, cache)
    env = {**os.environ, "PYTHONPATH": str(site), "XDG_CACHE_HOME": str(cache), "COLUMNS": "100"}
    env.pop("COTK_REPRO_CACHE", None)
    script = tmp_path / "launch.py"
    script.write_text(LAUNCH)
    # the reader exits before reading: the replay's write meets a closed pipe
    proc = subprocess.run(
        f"'{sys.executable}' '{script}' --help | true",
        shell=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr


def test_a_long_output_is_neither_copied_nor_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    try:
        with help_cache.recording(["serve", "--db", "-h"]):
            sys.stdout.write("Usage: " + "x" * (help_cache._KEEP_AT_MOST + 10))
            raise SystemExit(0)
    except SystemExit:
        pass
    assert not help_cache.replay(["serve", "--db", "-h"])


def test_flags_show_no_bool_type_in_help(cli):
    """Typer 0.29 prints `<bool>` beside on/off flags in its rich help, as if they took a value: not here."""
    res = cli("run", "--help", env={"COLUMNS": "140"})
    assert res.returncode == 0, res
    assert "<bool>" not in res.stdout
    assert "--allow-dirty" in res.stdout and "<str>" in res.stdout  # options with values keep their type
