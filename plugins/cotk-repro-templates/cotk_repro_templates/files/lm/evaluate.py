"""The CoTK paper's metrics for language generation (its Tables 4 and 5), each with its hash.

* perplexity of the test split over F ∪ R with the rare-word rule (a word outside the
  model's vocabulary F gets p(<unk>) / |R|), fed by ``perplexity_batches``;
* BLEU of the generated sentences against the whole test split, Self-BLEU,
  forward / backward / harmonic BLEU, forward / reverse perplexity (a Kneser-Ney LM)
  and Distinct-2, over the generated sentences.
"""

from __future__ import annotations

from cotk_repro.metrics import get_metric


def evaluate(
    dl,
    perplexity_batches,
    generated: list[str],
    split: str = "test",
    bleu_tokenizer: str = "nltk",
    **perplexity_options,
) -> list[dict]:
    """Every metric's ``close()``/``compute()`` output, for ``save_result``. ``bleu_tokenizer``: the BLEU family's
    tokenizer (``nltk``: WordPunct; ``zh``, ``char``, ``13a``, ``intl``, ``ja-mecab``, ``ko-mecab``: sacrebleu's)."""
    perplexity = get_metric("perplexity", dataloader=dl, **perplexity_options)
    for batch in perplexity_batches:
        perplexity.forward(batch)
    references = dl.raw_sentences(split)
    return [
        perplexity.close(),
        get_metric("bleu", tokenizer=bleu_tokenizer).compute(generated, [references] * len(generated)),
        get_metric("self-bleu", tokenizer=bleu_tokenizer).compute(generated),
        get_metric("fw-bw-bleu", tokenizer=bleu_tokenizer).compute(generated, references),
        get_metric("fw-rv-ppl").compute(generated, [references]),
        get_metric("distinct", ngram=2).compute(generated),
    ]
