"""GPT-2 (Hugging Face transformers) over the loader's words.

Every word ``w`` of a sentence is fed as the BPE pieces of ``" " + w``, and a sentence ends
with ``<|endoftext|>``, which also starts it. So GPT-2 gives every word of F ∪ R its own
probability (the product of its pieces'); the perplexity metric uses those as they are.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

#: hyper-parameters; ``paper`` is the CoTK benchmark's GPT-2 fine-tuning (Adam 1e-4, batch 64,
#: gradient clip 5, lowercase text, sentences up to 50 tokens, top-10 sampling)
PRESETS = {
    "tiny": dict(data="data", tokenizer="space", lowercase=False, min_frequent_vocab_times=2, max_sent_length=30,
                 epochs=2, batch_size=16, lr=1e-3, grad_clip=5.0, samples=50, max_gen_length=20, top_k=10,
                 temperature=1.0),
    "paper": dict(data="data", tokenizer="space", lowercase=True, min_frequent_vocab_times=10, max_sent_length=50,
                  epochs=100, batch_size=64, lr=1e-4, grad_clip=5.0, samples=5000, max_gen_length=50, top_k=10,
                  temperature=1.0),
}


class GPT2:
    """A pretrained causal LM and its tokenizer, with word-level helpers for training and evaluation."""

    def __init__(self, name_or_path: str, device: str):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(name_or_path)
        self.lm = AutoModelForCausalLM.from_pretrained(name_or_path).to(device)
        self.eos = self.tokenizer.eos_token_id
        self.device = device
        self._pieces: dict[str, list[int]] = {}

    def pieces(self, word: str) -> list[int]:
        """The BPE ids of ``" " + word`` (cached)."""
        if word not in self._pieces:
            self._pieces[word] = self.tokenizer.encode(" " + word, add_special_tokens=False)
        return self._pieces[word]

    def sequence(self, context: list[list[str]], words: list[str]) -> tuple[list[int], list[int]]:
        """Ids of ``<eos> context.. <eos> words.. <eos>``; and the word (or final <eos>) index each id belongs to.

        ``context`` is a list of earlier utterances (empty for a language model); ids before the
        target utterance belong to index -1 (not scored).
        """
        ids, owner = [self.eos], [-1]
        for utterance in context:
            for word in utterance:
                ids += self.pieces(word)
            ids.append(self.eos)
        owner += [-1] * (len(ids) - 1)
        for i, word in enumerate(words):
            piece = self.pieces(word)
            ids += piece
            owner += [i] * len(piece)
        ids.append(self.eos)
        owner.append(len(words))
        return ids, owner

    def _forward(self, sequences: list[list[int]]) -> torch.Tensor:
        """Log-probabilities of every next id, right-padded: [batch, time - 1, vocab]."""
        width = max(len(s) for s in sequences)
        ids = torch.tensor([s + [self.eos] * (width - len(s)) for s in sequences], device=self.device)
        mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in sequences], device=self.device)
        logits = self.lm(input_ids=ids, attention_mask=mask).logits
        return F.log_softmax(logits[:, :-1].float(), dim=-1), ids[:, 1:]

    def loss(self, contexts, utterances) -> tuple[torch.Tensor, int]:
        """Summed negative log-likelihood of the target utterances' pieces (and <eos>), and the number of pieces."""
        seqs = [self.sequence(c, u) for c, u in zip(contexts, utterances)]
        logp, target = self._forward([ids for ids, _ in seqs])
        scored = torch.zeros_like(target, dtype=torch.bool)
        for row, (ids, owner) in enumerate(seqs):
            scored[row, : len(ids) - 1] = torch.tensor([o >= 0 for o in owner[1:]], device=scored.device)
        picked = logp.gather(-1, target[..., None]).squeeze(-1)
        return -picked[scored].sum(), int(scored.sum())

    @torch.no_grad()
    def word_log_probs(self, contexts, utterances) -> list[list[float]]:
        """Per target utterance: the log-probability of each word and of the end, given what precedes it."""
        seqs = [self.sequence(c, u) for c, u in zip(contexts, utterances)]
        logp, target = self._forward([ids for ids, _ in seqs])
        picked = logp.gather(-1, target[..., None]).squeeze(-1).double().cpu()
        out = []
        for row, (ids, owner) in enumerate(seqs):
            words = [0.0] * (len(utterances[row]) + 1)
            for position, who in enumerate(owner[1:]):
                if who >= 0:
                    words[who] += float(picked[row, position])
            out.append(words)
        return out

    @torch.no_grad()
    def generate(self, contexts, max_pieces: int, top_k: int, temperature: float, generator) -> list[str]:
        """A continuation of each ``<eos> context <eos>`` until <eos> (top-k sampling; ``top_k`` 0: greedy)."""
        from common import top_k_choice

        texts = []
        for context in contexts:
            ids = self.sequence(context[:-1], context[-1])[0] if context else [self.eos]
            prompt = torch.tensor([ids], device=self.device)
            out, past, new = prompt, None, []
            for _ in range(max_pieces):
                result = self.lm(input_ids=out, past_key_values=past, use_cache=True)
                past = result.past_key_values
                nxt = int(top_k_choice(result.logits[:, -1].float().cpu(), top_k, temperature, generator)[0])
                if nxt == self.eos:
                    break
                new.append(nxt)
                out = torch.tensor([[nxt]], device=self.device)
            texts.append(self.tokenizer.decode(new).strip())
        return texts


def metric_rows(all_ids, lengths, word_log_probs, all_vocab_size: int):
    """The perplexity metric's ``gen_log_prob`` over F ∪ R: each reference word's log-probability in its column.

    GPT-2 scores every word itself, so no rare-word redistribution applies; the other columns are
    never read (the metric is built with ``check_probabilities=False``).
    """
    import numpy as np

    rows = np.zeros((len(lengths), all_ids.shape[1] - 1, all_vocab_size))
    for b, (length, lps) in enumerate(zip(lengths, word_log_probs)):
        rows[b, np.arange(length - 1), all_ids[b, 1:length]] = lps
    return rows
