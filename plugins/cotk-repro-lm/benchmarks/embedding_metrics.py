"""Benchmark: ``bertscore`` against ``bert_score.score`` and ``mauve``'s featurization against ``mauve-text``'s own,
with small local models on CPU, in the same run.

    python plugins/cotk-repro-lm/benchmarks/embedding_metrics.py [--pairs 10000] [--layers 4] [--dim 128]
                                                                 [--batch-size 64] [--mauve-texts 2000]
                                                                 [--threads 1]

Texts: COCO captions of the repository's fixtures (``tests/fixtures/texygen``; hypotheses ``coco_test.txt``,
references ``coco_train.txt``, paired by line, cycled up to ``--pairs``). Models: a BERT (``--layers`` layers,
``--dim`` wide, 4 heads) and a GPT-2 of the same shape, with seeded random weights and tokenizers trained on the
captions; nothing is downloaded. Model loading is excluded from the timings of both sides.

* BERTScore: ``get_metric("bertscore", ...).compute`` (hash included) vs ``bert_score.score(...)`` with the same
  folder, layer and batch size; the largest per-sentence F1 difference is printed (ours equals the package's at
  ``batch_size=1``; at larger batches the package's padding can move a token whose similarities are all
  negative: docs/lm.md).
* MAUVE: featurization of ``--mauve-texts`` texts per side, ours (batched by exact length) vs the package's
  ``get_features_from_input`` (batch 1, its default, and ``--batch-size`` with its padding), and the clustering
  (``mauve.compute_mauve`` on the features, the same code on both sides) timed once.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=10000)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--mauve-texts", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import torch

    torch.set_num_threads(args.threads)
    sys.path.insert(0, str(HERE.parent / "tests"))
    import bert_score
    import numpy as np
    from lm_support import train_bpe, train_wordpiece
    from transformers import (
        BertConfig,
        BertModel,
        BertTokenizerFast,
        GPT2Config,
        GPT2LMHeadModel,
        PreTrainedTokenizerFast,
    )

    from cotk_repro.metrics import get_metric

    data = ROOT / "tests" / "fixtures" / "texygen"
    test = data.joinpath("coco_test.txt").read_text(encoding="utf-8").splitlines()
    train = data.joinpath("coco_train.txt").read_text(encoding="utf-8").splitlines()
    hyps = [test[i % len(test)] for i in range(args.pairs)]
    refs = [train[(i * 7) % len(train)] for i in range(args.pairs)]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        tok = BertTokenizerFast(
            tokenizer_file=str(train_wordpiece(tmp / "wp")),
            unk_token="[UNK]",
            cls_token="[CLS]",
            sep_token="[SEP]",
            pad_token="[PAD]",
            mask_token="[UNK]",
            model_max_length=128,
        )
        torch.manual_seed(0)
        BertModel(
            BertConfig(
                vocab_size=len(tok),
                hidden_size=args.dim,
                num_hidden_layers=args.layers,
                num_attention_heads=4,
                intermediate_size=4 * args.dim,
                max_position_embeddings=128,
            )
        ).save_pretrained(tmp / "bert")
        tok.save_pretrained(tmp / "bert")
        bert = str(tmp / "bert")
        metric = get_metric(
            "bertscore", model=bert, num_layers=args.layers, batch_size=args.batch_size, device="cpu", per_sentence=True
        )
        metric.compute(hyps[:8], [[r] for r in refs[:8]])  # warm up
        t = time.perf_counter()
        ours = metric.compute(hyps, [[r] for r in refs])
        t_ours = time.perf_counter() - t
        bert_score.score(hyps[:8], refs[:8], model_type=bert, num_layers=args.layers, nthreads=0, device="cpu")
        t = time.perf_counter()
        P, R, F = bert_score.score(
            hyps, refs, model_type=bert, num_layers=args.layers, batch_size=args.batch_size, nthreads=0, device="cpu"
        )
        t_peer = time.perf_counter() - t
        diff = float(np.abs(np.asarray(ours["bertscore per-sentence"]) - F.numpy()).max())
        print(
            f"torch {torch.__version__}, {args.threads} thread(s), BERT {args.layers}x{args.dim}, "
            f"batch {args.batch_size}"
        )
        print(
            f"bertscore {args.pairs} pairs: ours {t_ours:.2f} s, bert_score.score {t_peer:.2f} s, "
            f"x{t_peer / t_ours:.2f}; F1 {ours['bertscore']:.9f} vs {float(F.double().mean()):.9f}, "
            f"largest per-sentence difference {diff:.2e}"
        )

        bpe = PreTrainedTokenizerFast(
            tokenizer_file=str(train_bpe(tmp / "bpe")),
            bos_token="<|endoftext|>",
            eos_token="<|endoftext|>",
            unk_token="<|endoftext|>",
        )
        torch.manual_seed(0)
        GPT2LMHeadModel(
            GPT2Config(
                vocab_size=len(bpe),
                n_positions=128,
                n_layer=args.layers,
                n_head=4,
                n_embd=args.dim,
                bos_token_id=bpe.bos_token_id,
                eos_token_id=bpe.eos_token_id,
            )
        ).save_pretrained(tmp / "gpt2")
        bpe.save_pretrained(tmp / "gpt2")
        gpt2 = str(tmp / "gpt2")
        texts_q, texts_p = hyps[: args.mauve_texts], refs[: args.mauve_texts]
        m = get_metric("mauve", featurizer=gpt2, batch_size=args.batch_size, device="cpu")
        t = time.perf_counter()
        q, p = m.features(texts_q), m.features(texts_p)
        t_feat = time.perf_counter() - t
        from mauve.compute_mauve import get_features_from_input

        peer = {}
        for b in (1, args.batch_size):
            t = time.perf_counter()
            fq = get_features_from_input(
                None, None, texts_q, gpt2, 1024, -1, name="q", verbose=False, batch_size=b, use_float64=False
            )
            fp = get_features_from_input(
                None, None, texts_p, gpt2, 1024, -1, name="p", verbose=False, batch_size=b, use_float64=False
            )
            peer[b] = (time.perf_counter() - t, float(max(np.abs(fq - q).max(), np.abs(fp - p).max())))
        t = time.perf_counter()
        value = m.mauve_of_features(p, q).mauve
        t_cluster = time.perf_counter() - t
        print(
            f"mauve {args.mauve_texts} + {args.mauve_texts} texts, GPT-2 {args.layers}x{args.dim}: featurization "
            f"ours {t_feat:.2f} s; mauve-text batch 1 {peer[1][0]:.2f} s (x{peer[1][0] / t_feat:.2f}, largest "
            f"feature difference {peer[1][1]:.1e}); batch {args.batch_size} {peer[args.batch_size][0]:.2f} s "
            f"(x{peer[args.batch_size][0] / t_feat:.2f}, {peer[args.batch_size][1]:.1e}); clustering and curve "
            f"(mauve.compute_mauve, shared) {t_cluster:.2f} s; MAUVE {value:.6f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
