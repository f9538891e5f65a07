"""Benchmark: ``fluency`` over 10,000 responses with a small GPT-2-shaped model on CPU, against the Hugging Face
``evaluate`` library's ``perplexity`` metric on the same model and texts, in the same run.

    python plugins/cotk-repro-lm/benchmarks/fluency.py [--n 10000] [--layers 4] [--dim 128] [--vocab 4000]
                                                      [--threads 1] [--batch-size 32] [--device cpu] [--json]

Texts: the repository's fixture corpus (``tests/fixtures/texygen``: COCO captions and the six Texygen models'
samples), the first ``--n`` non-empty lines. Model: a GPT-2 (``--layers`` layers, ``--dim`` wide, 4 heads) with
seeded random weights and a byte-level BPE of ``--vocab`` pieces trained on the captions; nothing is downloaded.

The peer: ``evaluate.load("perplexity")`` fetches its script from the Hugging Face hub, which the ``evaluate``
wheel does not ship and this machine cannot reach. So the peer here is a FAITHFUL TRANSCRIPTION of that script's
``_compute`` (evaluate 0.4.x ``metrics/perplexity/perplexity.py``), labelled "evaluate-perplexity
(transcribed)": all predictions tokenized at once with ``padding=True`` (every batch as wide as the longest
text of the whole set), BOS prepended (``add_start_token=True``), batches of 16 in input order,
``CrossEntropyLoss(reduction="none")`` over the shifted logits times the attention mask, per-text perplexity
``exp(sum(loss * mask) / sum(mask))``. Model loading is excluded from both timings.

Equality: our per-sentence ``fluency-raw`` is ``(1/|r|) log P(r)`` with the same ``<bos> r`` input, so
``exp(-fluency-raw)`` must equal the peer's perplexity of every text (relative difference printed).
Throughput: scored tokens (the texts' tokens, identical for both) per second of wall-clock time.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "texygen"


def texts(n: int) -> list[str]:
    files = (
        [FIXTURES / "coco_test.txt"] + sorted((FIXTURES / "instances").glob("*.txt")) + [FIXTURES / "coco_train.txt"]
    )
    out: list[str] = []
    for f in files:
        out.extend(line.strip() for line in f.read_text(encoding="utf-8").splitlines() if line.strip())
    if len(out) < n:
        raise SystemExit(f"only {len(out)} fixture lines, fewer than --n {n}")
    return out[:n]


def build_model(folder: Path, layers: int, dim: int, vocab: int) -> Path:
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    train = (FIXTURES / "coco_train.txt").read_text(encoding="utf-8").splitlines()
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        train, vocab_size=vocab, min_frequency=2, special_tokens=["<|endoftext|>"], show_progress=False
    )
    bpe.save(str(folder / "bpe.json"))
    tok = PreTrainedTokenizerFast(
        tokenizer_file=str(folder / "bpe.json"),
        bos_token="<|endoftext|>",
        eos_token="<|endoftext|>",
        unk_token="<|endoftext|>",
    )
    torch.manual_seed(0)
    cfg = GPT2Config(
        vocab_size=len(tok),
        n_positions=256,
        n_layer=layers,
        n_head=4,
        n_embd=dim,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    model_dir = folder / "model"
    GPT2LMHeadModel(cfg).save_pretrained(model_dir, safe_serialization=True)
    tok.save_pretrained(model_dir)
    return model_dir


def peer_perplexity(model, tokenizer, predictions, batch_size=16, add_start_token=True, device="cpu", max_length=None):
    """evaluate's perplexity ``_compute``, transcribed (the model and tokenizer passed in, not loaded)."""
    import numpy as np
    import torch
    from torch.nn import CrossEntropyLoss

    if tokenizer.pad_token is None and batch_size > 1:
        # transformers 5 dropped special_tokens_map_extended; special_tokens_map holds the same tokens here
        extended = getattr(tokenizer, "special_tokens_map_extended", None) or tokenizer.special_tokens_map
        existing_special_tokens = list(extended.values())
        assert len(existing_special_tokens) > 0
        tokenizer.add_special_tokens({"pad_token": existing_special_tokens[0]})
    if add_start_token and max_length:
        assert tokenizer.bos_token is not None
        max_tokenized_len = max_length - 1
    else:
        max_tokenized_len = max_length
    encodings = tokenizer(
        predictions,
        add_special_tokens=False,
        padding=True,
        truncation=True if max_tokenized_len else False,
        max_length=max_tokenized_len,
        return_tensors="pt",
        return_attention_mask=True,
    ).to(device)
    encoded_texts = encodings["input_ids"]
    attn_masks = encodings["attention_mask"]
    if add_start_token:
        assert torch.all(torch.ge(attn_masks.sum(1), 1)), "Each input text must be at least one token long."
    else:
        assert torch.all(torch.ge(attn_masks.sum(1), 2))
    ppls = []
    loss_fct = CrossEntropyLoss(reduction="none")
    for start_index in range(0, len(encoded_texts), batch_size):
        end_index = min(start_index + batch_size, len(encoded_texts))
        encoded_batch = encoded_texts[start_index:end_index]
        attn_mask = attn_masks[start_index:end_index]
        if add_start_token:
            bos_tokens_tensor = torch.tensor([[tokenizer.bos_token_id]] * encoded_batch.size(dim=0)).to(device)
            encoded_batch = torch.cat([bos_tokens_tensor, encoded_batch], dim=1)
            attn_mask = torch.cat(
                [torch.ones(bos_tokens_tensor.size(), dtype=torch.int64).to(device), attn_mask], dim=1
            )
        labels = encoded_batch
        with torch.no_grad():
            out_logits = model(encoded_batch, attention_mask=attn_mask).logits
        shift_logits = out_logits[..., :-1, :].contiguous()
        shift_labels = labels[..., 1:].contiguous()
        shift_attention_mask_batch = attn_mask[..., 1:].contiguous()
        perplexity_batch = torch.exp(
            (loss_fct(shift_logits.transpose(1, 2), shift_labels) * shift_attention_mask_batch).sum(1)
            / shift_attention_mask_batch.sum(1)
        )
        ppls += perplexity_batch.tolist()
    return {"perplexities": ppls, "mean_perplexity": np.mean(ppls)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=4000)
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads for both (default 1)")
    ap.add_argument("--batch-size", type=int, default=32, help="our batch size (the peer uses its own 16)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    sys.path.insert(0, str(ROOT))
    import torch

    torch.set_num_threads(args.threads)
    data = texts(args.n)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("COTK_REPRO_CACHE", str(Path(tmp) / "cache"))
        model_dir = build_model(Path(tmp), args.layers, args.dim, args.vocab)
        from cotk_repro.metrics import get_metric
        from cotk_repro_lm.lm import load_model

        lm = load_model(model_dir, args.device)  # loading excluded from the timing (the peer's too)
        metric = get_metric(
            "fluency", model=str(model_dir), batch_size=args.batch_size, device=args.device, per_sentence=True
        )
        t0 = time.perf_counter()
        ours = metric.compute(data)
        t_ours = time.perf_counter() - t0

        from transformers import AutoTokenizer

        peer_tok = AutoTokenizer.from_pretrained(str(model_dir))
        t0 = time.perf_counter()
        peer = peer_perplexity(lm.model, peer_tok, data, batch_size=16, add_start_token=True, device=args.device)
        t_peer = time.perf_counter() - t0
        n_tokens = sum(len(ids) for ids in lm.tokenizer(data, add_special_tokens=False)["input_ids"])
        width = max(len(ids) for ids in lm.tokenizer(data, add_special_tokens=False)["input_ids"])
    ppl_ours = [math.exp(-v) for v in ours["fluency-raw per-sentence"]]
    rel = max(abs(a - b) / b for a, b in zip(ppl_ours, peer["perplexities"]))
    result = {
        "texts": len(data),
        "scored_tokens": n_tokens,
        "longest_text_tokens": width,
        "model": {"layers": args.layers, "dim": args.dim, "vocab": args.vocab},
        "threads": args.threads,
        "device": args.device,
        "ours": {"seconds": t_ours, "tokens_per_s": n_tokens / t_ours, "batch_size": args.batch_size},
        "evaluate-perplexity (transcribed)": {"seconds": t_peer, "tokens_per_s": n_tokens / t_peer, "batch_size": 16},
        "speedup": t_peer / t_ours,
        "max_relative_difference_of_perplexities": rel,
        "values_equal": rel < 1e-4,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(
        f"fluency over {len(data)} texts ({n_tokens} scored tokens, longest {width}); GPT-2 {args.layers} layers x "
        f"{args.dim}, vocab {args.vocab}, {args.device}, {args.threads} thread(s)"
    )
    print(f"  ours (cotk-repro-lm fluency)          {t_ours:8.2f} s  {n_tokens / t_ours:10.0f} tokens/s")
    print(f"  evaluate-perplexity (transcribed)     {t_peer:8.2f} s  {n_tokens / t_peer:10.0f} tokens/s")
    print(
        f"  speedup {t_peer / t_ours:.2f}x (target >= 2x); per-text perplexities equal within "
        f"{rel:.2e} relative ({'OK' if rel < 1e-4 else 'DIFFER'})"
    )


if __name__ == "__main__":
    main()
