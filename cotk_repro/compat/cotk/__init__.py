"""``cotk_repro.compat.cotk``: CoTK 0.1.0's metrics, as drop-in adapters over this library's native metrics.

Same class names, constructor arguments, ``forward(data)`` / ``close()`` and result keys as CoTK 0.1.0, and
the same values (CoTK's own v2 regression files pass through them, ``tests/test_compat_cotk.py``). The CoTK
rules are named settings of the native metrics (``sample_mode="cotk"``, ``retokenize=False``, the perplexity
``unk_targets``/``rare_words``/``reference_check`` rules, the ``cotk`` n-gram LM, ...), so each result's hash,
this library's, covers the rule that made it. ``dataloader``: this library's dataloaders or
:func:`vocab_dataloader` (what CoTK's tests build with ``GeneralVocab.from_predefined``)::

    from cotk_repro.compat.cotk import BleuCorpusMetric, vocab_dataloader
    dl = vocab_dataloader(["<pad>", "<unk>", "<go>", "<eos>", "i", "like", "python"], 7)
    m = BleuCorpusMetric(dl, reference_allvocabs_key="ref_allvocabs", gen_key="gen")
    m.forward({"ref_allvocabs": [[2, 4, 5, 6, 3]], "gen": [[4, 5, 6, 3]]})
    m.close()   # {"bleu": 0.8408..., "bleu hashvalue": "<this library's hash>"} (3 words: no 4-gram, method3)
"""

from __future__ import annotations

from .accuracy import AccuracyMetric
from .base import CotkMetric
from .bleu import BleuCorpusMetric, FwBwBleuCorpusMetric, MultiTurnBleuCorpusMetric, SelfBleuCorpusMetric
from .chain import MetricChain
from .distinct import DistinctNgrams, DistinctNgramsCorpus
from .ngram_perplexity import NgramFwBwPerplexityMetric
from .perplexity import MultiTurnPerplexityMetric, PerplexityMetric
from .precision_recall import BleuPrecisionRecallMetric, EmbSimilarityPrecisionRecallMetric
from .recorder import LanguageGenerationRecorder, MultiTurnDialogRecorder, SingleTurnDialogRecorder
from .vocab import CotkVocabLoader, vocab_dataloader

MetricBase = CotkMetric

__all__ = [
    "MetricBase",
    "CotkMetric",
    "CotkVocabLoader",
    "vocab_dataloader",
    "BleuCorpusMetric",
    "SelfBleuCorpusMetric",
    "FwBwBleuCorpusMetric",
    "MultiTurnBleuCorpusMetric",
    "PerplexityMetric",
    "MultiTurnPerplexityMetric",
    "NgramFwBwPerplexityMetric",
    "BleuPrecisionRecallMetric",
    "EmbSimilarityPrecisionRecallMetric",
    "AccuracyMetric",
    "DistinctNgrams",
    "DistinctNgramsCorpus",
    "MetricChain",
    "SingleTurnDialogRecorder",
    "MultiTurnDialogRecorder",
    "LanguageGenerationRecorder",
]
