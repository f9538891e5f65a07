"""A tiny GPT-2 (2 layers, width 32, seeded random weights) and a byte-level BPE trained on the given text files,
saved with save_pretrained: the local model scripts/ci-dists.sh scores `evaluate -m fluency` with (no hub).

    python scripts/ci_tiny_gpt2.py DEST TEXT_FILE...
"""

import sys
from pathlib import Path


def main(dest: str, files: list[str]) -> None:
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    texts = [line for f in files for line in Path(f).read_text(encoding="utf-8").splitlines() if line.strip()]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        texts, vocab_size=400, min_frequency=2, special_tokens=["<|endoftext|>"], show_progress=False
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe, bos_token="<|endoftext|>", eos_token="<|endoftext|>", unk_token="<|endoftext|>"
    )
    torch.manual_seed(0)
    cfg = GPT2Config(
        vocab_size=len(tok),
        n_positions=128,
        n_layer=2,
        n_head=2,
        n_embd=32,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    GPT2LMHeadModel(cfg).save_pretrained(dest, safe_serialization=True)
    tok.save_pretrained(dest)
    print(dest)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2:])
