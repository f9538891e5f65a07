"""``cotk-repro evaluate``: score a hypotheses file against a references file. Parsing and rendering only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from . import output


def result_rows(result: dict[str, Any]) -> list[list[Any]]:
    """One row per value: key, value, hash (shortened), signature."""
    from ..core.results import parse_result_dict

    rows = []
    for key, r in parse_result_dict(result, skip_extras=True).items():
        value = output.fmt_value(r["value"])
        ci = result.get(key + " ci")
        if isinstance(ci, dict) and isinstance(ci.get("half_width"), (int, float)):
            value += f" ± {ci['half_width']:.4g}"
        rows.append([key, value, output.fmt_hash(r["hash"]), r["signature"] or ""])
    return rows


def register(cli: typer.Typer) -> None:
    """Add the `evaluate` command (score hypothesis files with metrics) to `cli`."""

    @cli.command("evaluate")
    def evaluate(
        hyps: Path | None = typer.Option(
            None,
            "--hyps",
            metavar="FILE",
            help="Generated sentences: a UTF-8 text file, one sentence per line, or FILE.jsonl with one JSON string "
            "per line (`generate --out FILE.jsonl`) (needed unless --groups is given).",
        ),
        refs: Path | None = typer.Option(
            None,
            "--refs",
            metavar="FILE",
            help="References: a text file with one "
            'reference per line, or JSONL with one {"references": [...]} object '
            "per line for several references per hypothesis. Needed by every metric "
            "but self-bleu and distinct-like ones.",
        ),
        metric: list[str] | None = typer.Option(
            None,
            "--metric",
            "-m",
            metavar="NAME",
            help="A metric to compute (repeatable; default: bleu). `cotk-repro plugins` lists the registered metrics.",
        ),
        option: list[str] | None = typer.Option(
            None,
            "--option",
            "-o",
            metavar="METRIC.KEY=VALUE",
            help="A metric option (repeatable), e.g. bleu.ngram=2 or "
            "self-bleu.sample=1000; VALUE is read as JSON when it is JSON "
            "(numbers, lists, null), else as a string.",
        ),
        tokenizer: str | None = typer.Option(
            None,
            "--tokenizer",
            "-t",
            metavar="NAME",
            help="Tokenizer for the "
            "metrics that split text with one (e.g. distinct): a registered "
            "name such as nltk or space. The BLEU family keeps its own "
            "(WordPunct, or -o bleu.tokenizer=NAME: 13a, intl, zh, char, "
            "ja-mecab, ko-mecab, space, ...).",
        ),
        queries: Path | None = typer.Option(
            None,
            "--queries",
            metavar="FILE",
            help="The query (context) each "
            "hypothesis answers, one per line, for metrics that read it (e.g. "
            "coherence from the cotk-repro-lm plugin).",
        ),
        groups: Path | None = typer.Option(
            None,
            "--groups",
            metavar="FILE",
            help="Groups of responses, JSONL with "
            'one {"responses": [...]} object per line (e.g. a system\'s answers '
            "to `cotk-repro augment` variants), for metrics that score groups "
            "(group-entropy).",
        ),
        per_sentence: bool = typer.Option(
            False,
            "--per-sentence",
            help="Also report per-sentence scores (lists, shown with --json) for the metrics that have them.",
        ),
        batch_size: int | None = typer.Option(
            None, "--batch-size", min=1, help="Batch size for the metrics that run a model (e.g. fluency, coherence)."
        ),
        protocol: Path | None = typer.Option(
            None,
            "--protocol",
            metavar="FILE",
            help="The prompt protocol (TOML) the hypotheses were generated under (`cotk-repro generate "
            "--protocol`): its hash joins every metric's hash and its first 12 hex digits every signature, so "
            "outputs of differently prompted systems are never ranked together. Without it, the protocol that "
            "--hyps FILE's sidecar FILE.json records is stamped; a --protocol with another hash is an error.",
        ),
        ci: bool = typer.Option(
            False,
            "--ci",
            help='Add a bootstrap 95% interval beside each value that has one: "KEY ci": {"mean", "half_width", '
            '"samples", "seed"} (sacrebleu\'s corpus_score(..., n_bootstrap=1000)); the signature gains |bs:N|seed:S, '
            "the hash stays the metric's.",
        ),
        ci_samples: int | None = typer.Option(
            None, "--ci-samples", metavar="N", help="Bootstrap resamples for --ci (default 1000)."
        ),
        ci_seed: int | None = typer.Option(
            None, "--ci-seed", metavar="S", help="The seed of the --ci resamples (default 12345, sacrebleu's)."
        ),
        json_out: bool = typer.Option(
            False,
            "--json",
            help="Print the result dict (values, hashes, signatures) as JSON on stdout, ready for a result file.",
        ),
    ) -> None:
        """Score generated text with hashed metrics: each value with its comparability hash and signature.

        Mismatched line counts, empty or missing files and unknown metric names are errors (exit 2).
        """
        from ..metrics.files import evaluate_files, parse_options

        names = list(dict.fromkeys(metric or ["bleu"]))
        opts = parse_options(list(option or []), names)
        loaded = None
        if protocol is not None:
            from ..llm.protocol import load_protocol

            loaded = load_protocol(protocol)
        stamp = loaded.sha256 if loaded is not None else None
        if hyps is not None:  # the protocol the outputs' sidecar (FILE.json, from `generate`) records, if any
            from ..llm.generate import protocol_of_outputs

            stamped = protocol_of_outputs(hyps, loaded, str(protocol) if protocol is not None else None)
            stamp = stamped.sha256 if stamped is not None else None
            if stamped is not None and stamped.sidecar is not None:
                output.info(f"stamping protocol {stamped.sha256[:12]} ({stamped.path}), recorded in {stamped.sidecar}")
        with output.progress("evaluating", total=len(names)) as advance:
            result = evaluate_files(
                hyps,
                refs,
                names,
                opts,
                tokenizer=tokenizer,
                on_metric=lambda _name: advance(),
                queries_path=queries,
                groups_path=groups,
                per_sentence=per_sentence,
                batch_size=batch_size,
                protocol=stamp,
                ci=(ci_samples, ci_seed) if ci or ci_samples is not None or ci_seed is not None else None,
            )
        if json_out:
            output.print_json(result)
            return
        source = hyps or groups
        assert source is not None  # evaluate_files refused a run given neither
        title = source.name + (f" vs {refs.name}" if refs else "")
        output.console.print(output.table(title, ["metric", "value", "hash", "signature"], result_rows(result)))
