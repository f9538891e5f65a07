"""The CoTK paper's metrics for single-turn dialogue (its Tables 7 and 8), each with its hash.

* perplexity of the test responses given their posts, over F ∪ R with the rare-word rule;
* BLEU of each generated response against its reference response; Distinct-1 and -2;
* with ``--scoring-model DIR`` and the plugin ``cotk-repro-lm`` installed: ``coherence``
  (the response given its post) and ``fluency``, normalized on the human test responses.
"""

from __future__ import annotations

from cotk_repro.metrics import get_metric


def evaluate(
    dl,
    perplexity_batches,
    generated: list[str],
    posts: list[str],
    scoring_model: str | None = None,
    split: str = "test",
    bleu_tokenizer: str = "nltk",
    **perplexity_options,
) -> list[dict]:
    """Every metric's ``close()``/``compute()`` output, for ``save_result``. ``bleu_tokenizer``: BLEU's tokenizer
    (``nltk``: WordPunct; ``zh``, ``char``, ``13a``, ``intl``, ``ja-mecab``, ``ko-mecab``: sacrebleu's)."""
    perplexity = get_metric(
        "perplexity",
        dataloader=dl,
        reference_allvocabs_key="resp_allvocabs",
        reference_len_key="resp_length",
        **perplexity_options,
    )
    for batch in perplexity_batches:
        perplexity.forward(batch)
    references = dl.raw_sentences(split)
    results = [
        perplexity.close(),
        get_metric("bleu", tokenizer=bleu_tokenizer).compute(generated, [[r] for r in references]),
        get_metric("distinct", ngram=(1, 2)).compute(generated),
    ]
    if scoring_model:
        results.extend(model_scores(generated, posts, references, scoring_model))
    return results


def model_scores(generated, posts, references, scoring_model) -> list[dict]:
    """coherence and fluency from the plugin cotk-repro-lm; skipped with a note when it is missing."""
    from cotk_repro.plugins import registry

    if not {"coherence", "fluency"} <= set(registry("metric")):
        print("note: coherence and fluency need the plugin cotk-repro-lm; skipped")
        return []
    coherence = get_metric(
        "coherence", model=scoring_model, normalize="reference", reference=references, reference_queries=posts
    )
    fluency = get_metric("fluency", model=scoring_model, normalize="reference", reference=references)
    return [coherence.compute(generated, queries=posts), fluency.compute(generated)]
