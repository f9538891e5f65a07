"""Commands of cotk-repro-lm: ``lm finetune``, ``augment``, ``correlate``. Parsing and rendering only."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer


def register(cli: typer.Typer) -> None:
    """Add the plugin's commands to the root application."""
    from cotk_repro.cli import output

    lm = typer.Typer(help="Causal language models for coherence and fluency (cotk-repro-lm).", no_args_is_help=True)

    @lm.command("finetune")
    def finetune_cmd(
        model: str = typer.Option(
            ...,
            "--model",
            metavar="DIR",
            help="A causal LM folder (save_pretrained, safetensors weights and its tokenizer), e.g. a local GPT-2.",
        ),
        data: Path = typer.Option(..., "--data", metavar="DIR", help="A dialogue dataset folder."),
        out: Path = typer.Option(
            ...,
            "--out",
            metavar="DIR",
            help="Where to write the fine-tuned model (must be new or empty); -o coherence.model=DIR accepts it.",
        ),
        loader: str = typer.Option(
            "single-turn-dialog",
            "--loader",
            "-l",
            help="single-turn-dialog or multi-turn-dialog (consecutive turns become pairs).",
        ),
        epochs: int = typer.Option(1, "--epochs", min=1, help="Passes over the training pairs."),
        lr: float = typer.Option(5e-5, "--lr", help="AdamW learning rate."),
        batch_size: int = typer.Option(8, "--batch-size", min=1, help="Pairs per step."),
        seed: int = typer.Option(0, "--seed", help="Seed of the data order and of torch."),
        max_pairs: int | None = typer.Option(None, "--max-pairs", min=1, help="Use the first N pairs only."),
        device: str = typer.Option("cpu", "--device", help="cpu (bit-reproducible), cuda, or auto."),
        json_out: bool = typer.Option(False, "--json", help="Print the settings and losses as JSON."),
    ) -> None:
        """Fine-tune a causal LM on (query, response) pairs with the loss on the response tokens only (seeded)."""
        from .finetune import finetune

        info = finetune(
            model,
            data,
            out,
            loader=loader,
            epochs=epochs,
            lr=lr,
            batch_size=batch_size,
            seed=seed,
            max_pairs=max_pairs,
            device=device,
            log=output.info,
        )
        if json_out:
            output.print_json(info)
        else:
            output.info(
                f"wrote {out}: {info['pairs']} pairs, response loss {info['loss_before']:.4f} -> "
                f"{info['loss_after']:.4f}"
            )

    cli.add_typer(lm, name="lm")

    @cli.command("augment")
    def augment_cmd(
        queries: Path = typer.Option(..., "--queries", metavar="FILE", help="Queries, one per line."),
        method: str = typer.Option(
            "wordnet",
            "--method",
            help="wordnet (synonym substitution) or ctg (top beams of a causal LM given the history).",
        ),
        variants: int = typer.Option(
            5,
            "--variants",
            min=1,
            help="Group size: the query and its variants "
            "(wordnet: verbs, nouns, adjectives/adverbs, all, then more draws).",
        ),
        seed: int = typer.Option(0, "--seed", help="Seed of the synonym draws."),
        wordnet: Path | None = typer.Option(
            None,
            "--wordnet",
            metavar="DIR",
            help="WordNet 3.0 files (default: $COTK_REPRO_WORDNET, then /usr/share/wordnet).",
        ),
        tagger: str = typer.Option(
            "auto", "--tagger", help="POS tags: nltk (perceptron data needed), wordnet (most frequent synset), or auto."
        ),
        model: str | None = typer.Option(None, "--model", metavar="DIR", help="ctg: the causal LM folder."),
        history: Path | None = typer.Option(
            None,
            "--history",
            metavar="FILE",
            help="ctg: the dialogue history before each query, one line per query (default: none).",
        ),
    ) -> None:
        """Augment each query into a group of close variants: JSONL on stdout, one {query, variants,
        augmentation} object per query. Answer every variant, add "responses", then score the groups with
        `cotk-repro evaluate --groups FILE -m group-entropy`."""
        from cotk_repro.metrics.files import _read_lines

        from .augment import augment_queries

        qs = _read_lines(queries, "queries")
        hist = _read_lines(history, "history") if history is not None else None
        records = augment_queries(
            qs,
            method,
            seed=seed,
            variants=variants,
            wordnet=str(wordnet) if wordnet else None,
            tagger=tagger,
            model=model,
            histories=hist,
        )
        for rec in records:
            sys.stdout.write(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n")

    @cli.command("correlate")
    def correlate_cmd(
        scores: Path = typer.Option(
            ...,
            "--scores",
            metavar="FILE",
            help="Metric scores: JSONL objects, evaluate --per-sentence --json output, or one number per line.",
        ),
        ratings: Path = typer.Option(
            ...,
            "--ratings",
            metavar="FILE",
            help="Human ratings: CSV with a header, one row per item, one column per rater (optional id column).",
        ),
        key: str | None = typer.Option(None, "--key", help="Which score field (or metric) to use."),
        plot: Path | None = typer.Option(
            None, "--plot", metavar="PNG", help="Write a scatter plot with the fitted line."
        ),
        json_out: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    ) -> None:
        """Pearson and Spearman (with p-values) of a metric against human ratings, and the raters'
        leave-one-rater-out reliability."""
        from .correlate import align, correlate, drop_unscored, read_ratings, read_scores, scatter_plot

        given, score_ids, used = read_scores(scores, key)
        rows, raters, rating_ids = read_ratings(ratings)
        given, rows = align(given, score_ids, rows, rating_ids)
        values, rows, unscored = drop_unscored(given, rows)
        result = {"key": used, **correlate(values, rows, raters)}
        if unscored:  # items the metric could not score (an LLM judge's unparsable answers), left out
            result["unscored"] = unscored
        if plot is not None:
            scatter_plot(
                values,
                [sum(r) / len(r) for r in rows],
                plot,
                xlabel=used,
                title=f"{used}: Pearson {result['pearson']:.3f}, Spearman {result['spearman']:.3f}",
            )
            result["plot"] = str(plot)
        if json_out:
            output.print_json(result)
            return
        table_rows = [
            ["pearson", f"{result['pearson']:.4f}", f"{result['pearson_p']:.3g}"],
            ["spearman", f"{result['spearman']:.4f}", f"{result['spearman_p']:.3g}"],
        ]
        if "inter_rater" in result:
            ir = result["inter_rater"]
            table_rows += [
                ["inter-rater pearson", f"{ir['pearson']:.4f}", ""],
                ["inter-rater spearman", f"{ir['spearman']:.4f}", ""],
            ]
        output.console.print(
            output.table(
                f"{used} vs human ({result['items']} items, {result['raters']} raters"
                + (f", {unscored} unscored left out)" if unscored else ")"),
                ["statistic", "value", "p"],
                table_rows,
            )
        )
