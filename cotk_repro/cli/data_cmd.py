"""``cotk-repro data``: dataset hash codes. Parsing and rendering only; the work is in :mod:`cotk_repro.data`."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from . import output


def render_summary(s: dict) -> None:
    """Print a dataset summary from `data hashes`: its hash codes, reference hashes and vocabulary."""
    from rich.table import Table
    from rich.text import Text

    t = Table(title=Text(f"{s['loader']} · {s['path']} · tokenizer {s['tokenizer']}"), show_lines=False)
    t.add_column("hash")
    t.add_column("value", no_wrap=True, min_width=64)
    for key in ("raw", "data", "vocab", "setting", "general"):
        t.add_row(Text(key), Text(s["hash_codes"][key]))
    refs = s.get("reference_hashes")
    if refs:
        t.add_row(Text(f"perplexity ({refs['split']})"), Text(refs["perplexity"]))
        t.add_row(Text(f"bleu ({refs['split']})"), Text(refs["bleu"]))
    output.console.print(t)
    v = s["vocab"]
    output.console.print(
        Text(
            f"vocabulary: |F| = {v['frequent']}, |R| = {v['rare']} "
            f"(frequent vocab size {v['frequent_vocab_size']}, all vocab size {v['all_vocab_size']})"
        )
    )
    st = Table(show_lines=False)
    for c in ("split", "samples", "tokens", "files"):
        st.add_column(c, overflow="fold")
    for name, info in s["splits"].items():
        st.add_row(Text(name), Text(str(info["samples"])), Text(str(info["tokens"])), Text(", ".join(info["files"])))
    output.console.print(st)


def register(cli: typer.Typer) -> None:
    """Add the `data` command group (`data hashes`) to `cli`."""
    group = typer.Typer(help="Datasets: load them with a dataloader and print their hash codes.", no_args_is_help=True)

    @group.command("hashes")
    def hashes(
        directory: Path = typer.Argument(
            ..., metavar="DIR", help="The dataset folder (e.g. train.txt, dev.txt, test.txt for language-generation)."
        ),
        loader: str = typer.Option(
            "language-generation",
            "--loader",
            "-l",
            help="A registered dataloader: language-generation, single-turn-dialog, multi-turn-dialog, or a plugin's.",
        ),
        tokenizer: str = typer.Option(
            "nltk",
            "--tokenizer",
            "-t",
            help="A registered tokenizer: nltk (WordPunct, as CoTK), space, punkt, or a plugin's.",
        ),
        min_frequent: int = typer.Option(
            10,
            "--min-frequent-vocab-times",
            min=0,
            help="A training token seen at least this many times joins the frequent vocabulary F.",
        ),
        min_rare: int = typer.Option(
            0,
            "--min-rare-vocab-times",
            min=0,
            help="Any other token seen at least this "
            "many times in all splits joins the rare vocabulary R (0: every token).",
        ),
        lowercase: bool = typer.Option(False, "--lowercase", help="Lowercase the text before tokenizing."),
        max_sent_length: int | None = typer.Option(
            None,
            "--max-sent-length",
            min=1,
            help="Truncate each utterance to this many tokens (part of the setting hash).",
        ),
        max_turns: int | None = typer.Option(
            None, "--max-turns", min=1, help="multi-turn-dialog: keep the first turns of each session."
        ),
        splits: str = typer.Option(
            "train,dev,test",
            "--splits",
            help="Comma-separated split names to load "
            "(must include train), e.g. train,test for a folder without a dev split.",
        ),
        reference_split: str = typer.Option(
            "test", "--reference-split", help="The split whose reference-side perplexity and BLEU hashes are printed."
        ),
        json_out: bool = typer.Option(False, "--json", help="Print everything as JSON on stdout."),
    ) -> None:
        """Print a dataset's hash codes (raw data, data, vocab, setting, general), the reference-side perplexity
        and BLEU hashes of the test split, |F|, |R| and the sample count of each split."""
        from ..data import load

        options = {
            "tokenizer": tokenizer,
            "min_frequent_vocab_times": min_frequent,
            "min_rare_vocab_times": min_rare,
            "lowercase": lowercase,
            "max_sent_length": max_sent_length,
            "splits": [s.strip() for s in splits.split(",") if s.strip()],
        }
        if max_turns is not None:
            options["max_turns"] = max_turns
        total = 0
        if directory.is_dir():
            total = sum(os.path.getsize(p) for p in directory.iterdir() if p.is_file())
        with output.progress(f"loading {directory}", total=total or None, thread=False) as advance:
            dl = load(loader, directory, progress=advance, **options)
        summary = dl.summary(reference_split)
        if json_out:
            output.print_json(summary)
        else:
            render_summary(summary)

    cli.add_typer(group, name="data")
