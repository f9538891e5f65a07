"""Keep the option tables in docs/*.md equal to the options the commands really take (their ``--help``).

Each table sits between two markers naming its command::

    <!-- options: evaluate -->
    | option | meaning |
    |---|---|
    | `--hyps FILE` | generated sentences ... |
    <!-- /options -->

The options come from the Click command Typer builds (``typer.main.get_command``), not from parsing help text.
``--write`` rewrites every block: a row keeps its hand-written text while every option it names exists; a name
an option has that the row lacks (a short alias, a ``--no-`` form) is added to the row; a row naming an option
that no longer exists is rewritten from the options it still names, or dropped; an option no row names gets a
row made from its help text. A command (or a group with options of its own) that has no block anywhere gets a
section in docs/cli.md. ``--check`` writes nothing and fails, printing the difference, when ``--write`` would
change a file (tests/test_docs_options.py runs it).

    python scripts/docs_options.py --check    # exit 1 and a diff when the docs drifted
    python scripts/docs_options.py --write    # bring the docs in line
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
REFERENCE = DOCS / "cli.md"  # where a command that no topic page documents gets its table
ROOT_NAME = "cotk-repro"  # the block name of the root command's own options (--debug, --version)
BLOCK = re.compile(
    r"(?P<open><!-- options: (?P<name>[^>]*?) -->\n)(?P<body>.*?)(?P<close><!-- /options -->)", re.DOTALL
)
NAME = re.compile(r"(?:^|[\s/,])(--?[A-Za-z0-9][\w-]*)")
CODE = re.compile(r"`([^`]*)`")
REFERENCE_HEAD = """# Command-line reference

The options of the commands that no topic page lists in a table (`compare`, `evaluate`, `publish`,
`reproduce`, `dashboard serve` ... have theirs on their own page). Every option table in `docs/` sits between `<!-- options: COMMAND -->` markers:
`python scripts/docs_options.py --write` keeps it equal to the command's `--help` (a new option gets a row from
its help text, a removed one loses its row) and adds a section here for a new command;
`tests/test_docs_options.py` fails when a table and the command differ.
"""


@dataclass
class Option:
    names: list[str]  # every spelling: --out, -o, --no-serve
    metavar: str | None  # None for a flag
    help: str
    default: str | None  # as the table says it, None when there is nothing worth saying
    hidden: bool = False


@dataclass
class Command:
    path: str  # "evaluate", "dashboard serve"; ROOT_NAME for the root
    options: list[Option] = field(default_factory=list)

    def by_name(self) -> dict[str, Option]:
        return {n: o for o in self.options for n in o.names}


def _metavar(param) -> str | None:
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return None
    if param.metavar:
        return param.metavar
    desc = getattr(param, "type_descriptor", None)  # Typer's (0.29 vendors Click: no Click ``param.type``)
    annotation = getattr(desc, "annotation", None)
    kind = getattr(annotation, "__name__", "")
    if getattr(desc, "file_annotation", None) is not None:
        return "FILE"
    return {"int": "N", "float": "X", "Path": "PATH"}.get(kind, param.name.strip("_").split("_")[-1].upper())


def _default(param) -> str | None:
    value = param.default
    if getattr(param, "secondary_opts", None) and value is not None:
        return "on" if value else "off"
    if value is None or value is False or value == () or value == [] or callable(value):
        return None
    if value is True:
        return "on"
    return f"`{value}`"


def load_commands() -> dict[str, Command]:
    """Every command with options of its own, from the Click command tree of the real application."""
    import typer.main

    from cotk_repro.cli.root import app
    from cotk_repro.cli.root import load_commands as load

    load()
    found: dict[str, Command] = {}

    def walk(cmd, path: list[str]) -> None:
        if getattr(cmd, "hidden", False):
            return
        options = [
            Option(
                names=list(p.opts) + list(p.secondary_opts),
                metavar=_metavar(p),
                help=" ".join((p.help or "").split()),
                default=_default(p),
                hidden=bool(p.hidden),
            )
            for p in cmd.params
            if p.param_type_name == "option"
        ]
        if options:
            found[" ".join(path) or ROOT_NAME] = Command(" ".join(path) or ROOT_NAME, options)
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return found


def names_in(cell: str) -> list[str]:
    """The option names a table's first cell gives, in its code spans: `--out DIR`, `-o` -> --out, -o."""
    return [n for span in CODE.findall(cell) for n in NAME.findall(span)]


def option_cell(opt: Option) -> str:
    if opt.metavar is None:
        long_ = [n for n in opt.names if n.startswith("--")]
        short = [n for n in opt.names if not n.startswith("--")]
        spans = [" / ".join(long_)] if long_ else []
        return ", ".join(f"`{s}`" for s in spans + short)
    first, *rest = opt.names
    return ", ".join([f"`{first} {opt.metavar}`".replace("|", "\\|"), *(f"`{n}`" for n in rest)])


def _split_row(line: str) -> list[str]:
    cells = re.split(r"(?<!\\)\|", line.strip())
    return [c.strip() for c in cells[1:-1]]


def _new_row(opt: Option, ncols: int) -> str:
    meaning = opt.help.replace("|", "\\|") or "(no help text)"
    if ncols == 3:
        return f"| {option_cell(opt)} | {opt.default or '—'} | {meaning} |"
    if opt.default and "default" not in meaning.lower():
        meaning += f" Default: {opt.default}."
    return f"| {option_cell(opt)} | {meaning} |"


def render_block(body: str, cmd: Command) -> str:
    """The block's table with every row naming existing options and every visible option in one row."""
    lines = body.splitlines()
    head = [ln for ln in lines[:2] if ln.startswith("|")]
    if len(head) < 2:
        head = ["| option | meaning |", "|---|---|"]
    ncols = len(_split_row(head[0]))
    known = cmd.by_name()
    rows, named = [], set()
    for line in lines[2:] if len(lines) >= 2 and lines[1].startswith("|") else lines:
        if not line.startswith("|"):
            continue
        cells = _split_row(line)
        names = names_in(cells[0]) if cells else []
        opts = []
        for n in names:
            if n in known and known[n] not in opts:
                opts.append(known[n])
        if not opts:
            continue  # every option the row named is gone
        if any(n not in known for n in names):  # some gone: the cell anew from those that remain
            cells[0] = ", ".join(option_cell(o) for o in opts)
        else:  # spellings the row lacks (an alias, the --no- form)
            missing = [n for o in opts for n in o.names if n not in names]
            cells[0] += "".join(f", `{n}`" for n in missing)
        named.update(id(o) for o in opts)
        rows.append("| " + " | ".join(cells) + " |")
    rows += [_new_row(o, ncols) for o in cmd.options if id(o) not in named and not o.hidden]
    return "\n".join(head + rows) + "\n"


def render(text: str, commands: dict[str, Command], seen: set[str], where: str) -> tuple[str, list[str]]:
    """``text`` with each block re-rendered; problems that --write cannot fix (an unknown command)."""
    problems: list[str] = []

    def one(m: re.Match) -> str:
        name = " ".join(m["name"].split())
        cmd = commands.get(name)
        if cmd is None:
            problems.append(
                f"{where}: <!-- options: {name} --> names no command with options "
                f"(known: {', '.join(sorted(commands))})"
            )
            return m[0]
        seen.add(name)
        return m["open"] + render_block(m["body"], cmd) + m["close"]

    return BLOCK.sub(one, text), problems


def reference_section(cmd: Command) -> str:
    title = "`cotk-repro`" if cmd.path == ROOT_NAME else f"`cotk-repro {cmd.path}`"
    body = render_block("", cmd)
    return f"\n## {title}\n\n<!-- options: {cmd.path} -->\n{body}<!-- /options -->\n"


def run(write: bool, docs: Path = DOCS, commands: dict[str, Command] | None = None) -> int:
    commands = load_commands() if commands is None else commands
    reference = docs / REFERENCE.name
    files = sorted(docs.glob("*.md"))
    seen: set[str] = set()
    new: dict[Path, str] = {}
    problems: list[str] = []
    for path in files:
        old = path.read_text(encoding="utf-8")
        text, found = render(old, commands, seen, str(path.relative_to(docs.parent)))
        problems += found
        new[path] = text
    missing = [c for name, c in commands.items() if name not in seen]
    if missing:
        text = new.get(reference) or REFERENCE_HEAD
        new[reference] = text.rstrip("\n") + "\n" + "".join(reference_section(c) for c in missing)
    changed = [p for p, t in new.items() if not p.exists() or p.read_text(encoding="utf-8") != t]
    for path in changed:
        if write:
            path.write_text(new[path], encoding="utf-8")
            print(f"wrote {path.relative_to(docs.parent)}")
        else:
            old = path.read_text(encoding="utf-8") if path.exists() else ""
            rel = str(path.relative_to(docs.parent))
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new[path].splitlines(True), rel, rel))
    for p in problems:
        print(f"error: {p}", file=sys.stderr)
    if changed and not write:
        print(
            f"the option tables differ from the commands in {len(changed)} file(s): "
            "run python scripts/docs_options.py --write",
            file=sys.stderr,
        )
    return 1 if problems or (changed and not write) else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="change nothing; exit 1 with a diff when docs drifted")
    mode.add_argument("--write", action="store_true", help="rewrite the option tables in docs/*.md")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    sys.exit(run(write=args.write))


if __name__ == "__main__":
    main()
