"""Text below both ``data`` and ``metrics``: the reference-side comparability hashes both compute
(:mod:`.reference_hashes`), on BLEU's fixed tokenizer (:mod:`cotk_repro.core.wordpunct`)."""
