"""Tiny causal language models made here, without downloads: a system to evaluate and a judge.

``python make_models.py system tiny-models/system --seed 0`` writes a 2-layer GPT-2 (32 dims) whose
tokenizer knows a fixed list of words; ``python make_models.py judge tiny-models/judge`` writes one pulled
towards the words "1" to "5", so that its answers parse as scores (which one depends on what it reads).
They are random: the outputs are word salad and the judgments noise. They exist so that the whole
pipeline (protocol, generation, judging, record, reproduction) runs in seconds on any CPU; put your
own model folder (or ``hf:NAME``) in their place for real numbers.

The weights are the same bytes on every CPU: each matrix is a uniform draw from numpy's integer
generator (never torch's initialisers, whose vectorised log/sin/cos differ between CPU kernels), so a
reproduction rebuilds the very model the record names by its weights' SHA-256.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

#: the judge's scale: the words its head is pulled towards, so that it answers in scores
SCALE = ["1", "2", "3", "4", "5"]
#: the system's vocabulary (a fixed list: the same tokenizer however the inputs change)
WORDS = sorted(
    set(
        """
        a an the this that these those it its they them their we our you your i my he she his her
        is are was were be been being has have had do does did can could will would should may might
        and or but if then so because when where why how what which who whom whose not no yes very
        of to in on at by for with from about into over under after before between through during
        one two three four five many few more most some any all each every other same new old good
        bad great small large long short first last next early late high low right left true false
        day night year time world sun moon star sky sea river mountain tree flower cat dog bird fish
        water fire air earth light dark color red blue green yellow white black book word story poem
        song music city house road car train ship plane food bread apple tea coffee friend child
        people name question answer reason idea way thing place part fact number list example
        make made go went see saw know knew think thought say said tell told give gave take took
        come came find found use used work worked write wrote read explain describe name names
        happy sad warm cold fast slow bright quiet loud simple hard easy clear
        . , ? ! : ; ' "
        """.split()
    )
    | set(SCALE)
)
SPECIALS = ["<unk>", "<pad>", "<eos>"]
SPACE = "\u2581"  # "▁": a space, as SentencePiece marks it
#: a chat template, so that a protocol with ``chat = true`` works on these models too
CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)


def kernel_free_init(model, seed: int, std: float) -> None:
    """Every weight matrix ``std`` times a uniform draw in [-1, 1) from numpy's integer generator, biases 0,
    layer norms 1: the same bytes on every CPU."""
    import numpy as np
    import torch

    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if p.dim() < 2:
                p.fill_(1.0 if name.endswith(".weight") else 0.0)  # a layer norm's weight; any bias
                continue
            draws = rng.integers(-(2**20), 2**20, size=tuple(p.shape), dtype=np.int64)
            p.copy_(torch.from_numpy((draws * (std / 2**20)).astype(np.float32)))


def words_tokenizer():
    """Words of :data:`WORDS` as single tokens, anything else spelled in printable ASCII characters (and newlines).

    A BPE written out, not trained: the vocabulary is the characters, then each word's prefixes
    ("▁s", "▁sk", "▁sky"), and the merges grow a word from the left one character at a time, so the
    same list gives the same tokenizer everywhere. Spaces are marked "▁" (Metaspace), so decoding
    gives the text back, which stop strings need.
    """
    import string

    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    # "\n" too: a stop string must be something the model can write (transformers refuses it otherwise)
    tokens = [*SPECIALS, SPACE, "\n", *(string.ascii_letters + string.digits + string.punctuation)]
    merges: list[tuple[str, str]] = []
    for word in WORDS:
        prefix = SPACE
        for char in word:
            if prefix + char not in tokens:
                tokens.append(prefix + char)
                merges.append((prefix, char))
            prefix += char
    core = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Metaspace(replacement=SPACE, prepend_scheme="always")
    core.decoder = decoders.Metaspace(replacement=SPACE, prepend_scheme="always")
    return core


def pull_towards(model, ids: list[int], strength: float = 8.0) -> None:
    """Make ``ids`` the likeliest next tokens whatever the input, and which of them wins depend on the input.

    The final layer norm gets a bias ``strength`` long along a fixed unit vector ``u``; the output rows of
    ``ids`` gain ``u``. Every hidden state then scores those tokens about ``strength`` higher than the rest,
    and their own random rows still rank them differently for different inputs.
    """
    import torch

    width = model.transformer.ln_f.bias.shape[0]
    u = torch.tensor([1.0 if i % 2 == 0 else -1.0 for i in range(width)]) / width**0.5
    with torch.no_grad():
        model.transformer.ln_f.bias.copy_(strength * u)
        for i in ids:
            model.lm_head.weight[i] += u


def build(kind: str, dest: str | Path, seed: int = 0) -> Path:
    """Write the tiny ``kind`` ("system" or "judge") model with ``seed`` into ``dest``; return ``dest``."""
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=words_tokenizer(),
        unk_token="<unk>",
        pad_token="<pad>",
        bos_token="<eos>",
        eos_token="<eos>",
        model_max_length=512,  # the model's n_positions: a longer prompt is an error, not a silent cut
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    vocab = tokenizer.get_vocab()
    config = GPT2Config(
        vocab_size=len(vocab),
        n_positions=512,
        n_layer=2,
        n_head=2,
        n_embd=32,
        bos_token_id=vocab["<eos>"],
        eos_token_id=vocab["<eos>"],
        pad_token_id=vocab["<pad>"],
        tie_word_embeddings=kind == "system",  # the judge's output head is its own (see below)
    )
    from transformers.utils import logging

    logging.disable_progress_bar()  # no "Writing model shards" bar in the run's log
    model = GPT2LMHeadModel(config)
    kernel_free_init(model, seed, std=0.3)
    if kind == "judge":
        pull_towards(model, [vocab[SPACE + word] for word in SCALE])
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(dest, safe_serialization=True)
    tokenizer.save_pretrained(dest)
    (dest / "MODEL.json").write_text(json.dumps({"made_by": "make_models.py", "kind": kind, "seed": seed}) + "\n")
    return dest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=["system", "judge"])
    parser.add_argument("dest", help="the folder to write the model into")
    parser.add_argument("--seed", type=int, default=0, help="another seed, another (equally random) model")
    args = parser.parse_args()
    print(build(args.kind, args.dest, args.seed))


if __name__ == "__main__":
    main()
