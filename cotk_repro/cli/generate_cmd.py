"""``cotk-repro generate``: a registered generator's outputs on an inputs file, prompted by a protocol. Parsing and
rendering only (the work: :func:`cotk_repro.llm.generate.generate_file`)."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import typer

from . import output

HELP = """Run a generator (e.g. a language model: hf, openai) on an inputs file: one output line per input line.

Writes --out FILE and FILE.json beside it (the system: generator, version, settings, pinned; the protocol's hash and path; the inputs' SHA-256; the number of lines). With --protocol FILE (TOML: template, system, chat, max_new_tokens, stop, few_shot; see docs/llm-protocol.md) each input is rendered into a prompt by its Jinja template, and its chat, max_new_tokens and stop become the generator's settings; score the outputs with `cotk-repro evaluate --protocol FILE` so that the protocol's hash joins every metric's.

Outputs are cached (in the user's cache folder, or --cache DIR) by generator, version, settings, inputs and protocol; every finished batch is kept, so after Ctrl-C the same command goes on where it stopped. Both files are written only when every output exists. A bad protocol, setting or file is one sentence and exit 2.
"""


def register(cli: typer.Typer) -> None:
    """Add the `generate` command (a generator's outputs on an inputs file) to `cli`."""

    @cli.command("generate", help=HELP)
    def generate(
        generator: str = typer.Option(
            ...,
            "--generator",
            metavar="NAME",
            help="A registered generator (`cotk-repro plugins` lists them), e.g. hf, openai, copy.",
        ),
        setting: list[str] | None = typer.Option(
            None,
            "--setting",
            "-g",
            metavar="NAME.KEY=VALUE",
            help="A generator setting (repeatable), e.g. hf.model=./tiny or hf.batch_size=8; VALUE is read as "
            "JSON when it is JSON (numbers, true/false, lists), else as a string.",
        ),
        inputs: Path | None = typer.Option(
            None,
            "--inputs",
            metavar="FILE",
            help="The inputs: a UTF-8 text file, one input per line (default: the file the protocol's 'inputs' names).",
        ),
        out: Path = typer.Option(
            ...,
            "--out",
            metavar="FILE",
            help="The outputs file to write, one line per input: FILE.jsonl holds one JSON string per line (every "
            "character kept), any other name the plain-text form (line breaks inside an output become spaces, "
            "docs/llm.md); FILE.json beside it.",
        ),
        protocol: Path | None = typer.Option(
            None,
            "--protocol",
            metavar="FILE",
            help="A prompt protocol (TOML): template, system prompt, few-shot examples, chat, max_new_tokens, stop.",
        ),
        cache: Path | None = typer.Option(
            None,
            "--cache",
            metavar="DIR",
            help="The folder outputs are cached in (default: generations/ in the user's cache folder).",
        ),
        json_out: bool = typer.Option(
            False, "--json", help="Print what FILE.json holds (and how many outputs came from the cache) as JSON."
        ),
    ) -> None:
        from ..llm.generate import generate_file
        from ..llm.protocol import load_protocol
        from ..metrics.files import parse_options

        settings = parse_options(list(setting or []), [generator], what="generator", example="hf.batch_size=8")
        loaded = load_protocol(protocol) if protocol is not None else None
        shown = 0
        bar = ExitStack()  # the bar starts at the first report, when the number of inputs is known
        advance = None

        def on_progress(done: int, total: int) -> None:
            nonlocal shown, advance
            if advance is None:
                advance = bar.enter_context(output.progress("generating", total=total))
            if done > shown:
                advance(done - shown)
                shown = done

        with bar:
            meta = generate_file(
                generator,
                settings.get(generator, {}),
                inputs,
                out,
                protocol=loaded,
                protocol_shown=str(protocol) if protocol is not None else None,
                cache_dir=cache,
                on_progress=on_progress,
            )
        if json_out:
            output.print_json(meta)
            return
        reused = meta["reused"]
        output.info(
            f"wrote {output.plural(meta['lines'], 'line')} to {out} and {out}.json"
            + (f" ({reused} from the cache)" if reused else "")
        )
