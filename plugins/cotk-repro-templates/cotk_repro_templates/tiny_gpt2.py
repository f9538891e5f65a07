"""A tiny, randomly initialised GPT-2 with a byte-level BPE tokenizer trained on given text.

For tests and benchmarks of the GPT-2 templates without the Hugging Face hub:
``python -m cotk_repro_templates.tiny_gpt2 DEST TEXT_FILE...`` writes a folder that
``--model DEST`` loads. Needs torch, transformers and tokenizers.
"""

from __future__ import annotations

import sys
from pathlib import Path

EOS = "<|endoftext|>"


def build_tiny_gpt2(dest: str | Path, texts: list[str], vocab_size: int = 400, seed: int = 0) -> Path:
    """Train the tokenizer on ``texts``, initialise a 2-layer GPT-2 (width 32) with ``seed``, save both in ``dest``."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast  # type: ignore[attr-defined]
    # (the ignore: transformers 5 resolves GPT2TokenizerFast lazily, an alias of GPT2Tokenizer; its stubs omit it)

    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(texts, vocab_size=vocab_size, min_frequency=1, special_tokens=[EOS], show_progress=False)
    tokenizer = GPT2TokenizerFast(tokenizer_object=bpe, bos_token=EOS, eos_token=EOS, unk_token=EOS)
    tokenizer.save_pretrained(dest)
    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=256,
        n_layer=2,
        n_head=2,
        n_embd=32,
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    GPT2LMHeadModel(config).save_pretrained(dest)
    return dest


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        raise SystemExit("usage: python -m cotk_repro_templates.tiny_gpt2 DEST TEXT_FILE...")
    texts = [line for f in argv[1:] for line in Path(f).read_text(encoding="utf-8").splitlines() if line.strip()]
    print(build_tiny_gpt2(argv[0], texts))


if __name__ == "__main__":
    main(sys.argv[1:])
