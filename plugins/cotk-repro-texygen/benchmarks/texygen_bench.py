"""Benchmarks of cotk-repro-texygen beside plain torch loops (one CPU thread each, interleaved runs, medians).

    python plugins/cotk-repro-texygen/benchmarks/texygen_bench.py [--repeats 5] [--samples 10000]

1. NLL-oracle of ``samples`` x 20-token sentences under the paper's oracle (5,000 words, 32/32): the metric as
   ``cotk-repro evaluate`` runs it (text in: parsing, the oracle rebuilt from its seed, the NLL), the NLL alone
   (``mean_nll`` on a tensor), and the floor: a plain batched loop (embedding, nn.LSTM, linear,
   log_softmax, gather) over the same oracle.
2. SeqGAN's Monte-Carlo rollout (batch 64, 20 tokens, 16 rollouts) in generated tokens per second: the shared
   ``Rollout.rewards`` beside a plain loop (one completion at a time, ``torch.multinomial``).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from cotk_repro_texygen.data import to_text
from cotk_repro_texygen.metrics import NllOracle, mean_nll
from cotk_repro_texygen.models.generator import START
from cotk_repro_texygen.models.reinforce import Rollout
from cotk_repro_texygen.oracle import build_oracle

PAPER = {"seed": 0, "vocab_size": 5000, "emb_dim": 32, "hidden_dim": 32, "seq_len": 20}


@torch.no_grad()
def plain_nll(oracle, x, batch=500):
    total, n = 0.0, 0
    for i in range(0, len(x), batch):
        b = x[i : i + batch]
        inp = torch.cat([torch.zeros(len(b), 1, dtype=torch.long), b[:, :-1]], 1)
        h, _ = oracle.lstm(oracle.emb(inp))
        logp = torch.log_softmax(oracle.out(h), -1)
        total -= float(logp.gather(2, b.unsqueeze(2)).sum())
        n += b.numel()
    return total / n


@torch.no_grad()
def plain_rollout(gen, samples, reward, num, rng):
    b, t = samples.shape
    out = torch.zeros(b, t)
    for _ in range(num):
        for i in range(1, t):
            inp = torch.cat([torch.full((b, 1), START), samples[:, : i - 1]], 1)
            _, state = gen.lstm(gen.emb(inp))
            tok, seq = samples[:, i - 1], [samples[:, :i]]
            for _ in range(i, t):
                h, state = gen.lstm(gen.emb(tok).unsqueeze(1), state)
                tok = torch.multinomial(torch.softmax(gen.out(h.squeeze(1)), -1), 1, generator=rng).squeeze(1)
                seq.append(tok.unsqueeze(1))
            out[:, i - 1] += reward(torch.cat(seq, 1))
        out[:, t - 1] += reward(samples)
    return out / num


def timed(fn):
    t0 = time.process_time()
    value = fn()
    return time.process_time() - t0, value


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--samples", type=int, default=10000)
    p.add_argument("--rollout-num", type=int, default=16)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    oracle = build_oracle(**PAPER)
    x = torch.randint(
        0, PAPER["vocab_size"], (args.samples, PAPER["seq_len"]), generator=torch.Generator().manual_seed(1)
    )
    text = to_text(x.numpy())
    metric, ours, floor = [], [], []
    for _ in range(args.repeats):
        t, v_metric = timed(lambda: NllOracle(**PAPER).compute(text)["nll-oracle"])
        metric.append(t)
        t, v_ours = timed(lambda: mean_nll(oracle, x))
        ours.append(t)
        t, v_floor = timed(lambda: plain_nll(oracle, x))
        floor.append(t)
    assert abs(v_ours - v_floor) < 1e-4 * v_floor and v_metric == v_ours
    m, o, f = (statistics.median(v) for v in (metric, ours, floor))
    print(f"NLL-oracle, {args.samples} x {PAPER['seq_len']} tokens, CPU seconds (median of {args.repeats}):")
    print(f"  metric (text in, oracle rebuilt) {m:.3f} s  ratio {m / f:.2f}")
    print(f"  mean_nll on a tensor             {o:.3f} s  ratio {o / f:.2f}")
    print(f"  plain batched torch loop (floor) {f:.3f} s  value {v_floor:.4f}")

    torch.manual_seed(0)
    gen = build_oracle(seed=1, vocab_size=5000, emb_dim=32, hidden_dim=32, seq_len=20)
    samples = gen.sample(64, torch.Generator().manual_seed(2))

    def reward(s):
        return (s[:, -1] % 7).float()

    tokens = 64 * args.rollout_num * sum(20 - i for i in range(1, 20))
    shared, plain = [], []
    for _ in range(max(1, args.repeats // 2)):
        t, _ = timed(lambda: Rollout(gen).rewards(samples, reward, args.rollout_num, torch.Generator().manual_seed(3)))
        shared.append(tokens / t)
        t, _ = timed(lambda: plain_rollout(gen, samples, reward, args.rollout_num, torch.Generator().manual_seed(3)))
        plain.append(tokens / t)
    print(f"SeqGAN rollout (batch 64, 20 tokens, {args.rollout_num} rollouts, {tokens} generated tokens):")
    print(f"  Rollout.rewards     {statistics.median(shared):,.0f} tokens/s")
    print(f"  plain loop          {statistics.median(plain):,.0f} tokens/s")


if __name__ == "__main__":
    main()
