"""Text below ``data``, ``metrics``, ``compare``, ``llm`` and the generation cache: the reference-side comparability
hashes both data and metrics compute (:mod:`.reference_hashes`, on BLEU's fixed tokenizer,
:mod:`cotk_repro.core.wordpunct`), and the text-file formats and streaming readers of gold references, samples
and inputs (:mod:`.textfmt`) that compare, ``cotk-repro generate`` and the generation cache read."""
