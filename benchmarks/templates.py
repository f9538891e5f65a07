"""The benchmark templates (plugin cotk-repro-templates): `cotk-repro run` wall time, training throughput.

1. Wall time of `cotk-repro run` for each template's tiny preset (scaffolded into a temporary
   folder and committed; the GPT-2 ones with a tiny GPT-2 built here), median of ``--runs``.
2. Training throughput (target tokens per second) of ``lm-gru`` and ``lm-transformer``: the
   template's own loop (``common.fit`` over ``dl.batches``: numpy batches turned into tensors
   at every step, checkpoints after every epoch) against a plain PyTorch loop over the same batches
   pre-tokenized into tensors beforehand, with the same model, initial weights, loss, optimizer,
   clipping and thread count (one intra- and one inter-op thread, checked). The two run *interleaved*,
   step by step (the peer's step between two of the template's, each on its own copy of the model), and
   each one's CPU time is counted apart, so the load of a shared machine falls on both alike; the ratio
   is the median over ``--repeats`` runs.
   Target (issue 15): the template within 10% of the plain loop.
   The corpus: the 2,000 COCO captions of ``tests/fixtures/texygen`` (or ``--data``).
3. The loader at MSCOCO size: milliseconds per shuffled batch of 64 from 80,000 lines (the fixture's
   captions repeated), ``dl.batches`` against the peer's indexing of one pre-padded tensor, beside the
   template's training step at the paper preset's size, so the loader's share at scale is visible.

    python benchmarks/templates.py [--runs N] [--repeats N] [--epochs N] [--skip-run] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import importlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEMPLATES = [
    "lm-gru",
    "lm-transformer",
    "lm-gpt2-finetune",
    "seq2seq-gru",
    "seq2seq-transformer",
    "dialog-gpt2-finetune",
]
TARGET_RATIO = 0.9
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}


def sh(cmd: list[str], cwd: Path) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env={**os.environ, **GIT_ENV})
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}")


def scaffold(template: str, base: Path) -> Path:
    sh([sys.executable, "-m", "cotk_repro", "init", template, "--template", template], base)
    root = base / template
    if "gpt2" in template:
        from cotk_repro_templates.tiny_gpt2 import build_tiny_gpt2

        texts = [line for f in sorted((root / "data").glob("*train*")) for line in f.read_text().splitlines()]
        build_tiny_gpt2(root / "tiny-gpt2", texts)
        config = root / "cotk-repro.toml"
        config.write_text(config.read_text().replace("args = []", 'args = ["--model", "tiny-gpt2"]'))
    sh(["git", "add", "-A"], root)
    sh(["git", "commit", "-q", "-m", "bench"], root)
    return root


def run_wall_times(base: Path, runs: int) -> dict[str, float]:
    out = {}
    for template in TEMPLATES:
        root = scaffold(template, base)
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            sh([sys.executable, "-m", "cotk_repro", "run", "-q"], root)
            times.append(time.perf_counter() - t0)
        out[template] = statistics.median(times)
        print(f"  run {template:22s} {out[template]:6.1f} s", file=sys.stderr)
    return out


@contextlib.contextmanager
def project_modules(root: Path):
    """Import the project's own model.py / common.py / train.py (as its entry would)."""
    old_cwd, old_path = Path.cwd(), list(sys.path)
    os.chdir(root)
    sys.path.insert(0, str(root))
    for name in ("model", "common", "train", "evaluate"):
        sys.modules.pop(name, None)
    try:
        yield importlib.import_module("train"), importlib.import_module("common"), importlib.import_module("model")
    finally:
        os.chdir(old_cwd)
        sys.path[:] = old_path


def corpus_folder(base: Path, data: Path | None) -> Path:
    if data is not None:
        return data
    folder = base / "coco2000"
    folder.mkdir()
    src = REPO / "tests" / "fixtures" / "texygen"
    (folder / "train.txt").write_text((src / "coco_train.txt").read_text())
    test = (src / "coco_test.txt").read_text().splitlines()
    (folder / "dev.txt").write_text("\n".join(test[:200]) + "\n")
    (folder / "test.txt").write_text("\n".join(test[200:400]) + "\n")
    return folder


def throughput(template: str, base: Path, data: Path, epochs: int, repeats: int) -> dict[str, float]:
    import torch
    from torch.nn import functional as F

    from cotk_repro import data as loaders

    root = scaffold(template, base)
    with project_modules(root) as (train, common, model_mod):
        settings = dict(model_mod.PRESETS["tiny"], epochs=epochs)
        common.seed_everything(1229, 1)
        dl = loaders.load(
            "language-generation",
            data,
            tokenizer="space",
            min_frequent_vocab_times=settings["min_frequent_vocab_times"],
            max_sent_length=settings["max_sent_length"],
        )
        model = model_mod.LanguageModel(dl.vocab.frequent_vocab_size, **settings)
        initial = {k: v.clone() for k, v in model.state_dict().items()}

        def batches(epoch):
            return dl.batches("train", settings["batch_size"], shuffle=True, seed=1229 + epoch)

        # the peer's input: the same batches, tokenized, padded and turned into tensors beforehand
        pre = [[torch.from_numpy(b["sent"]) for b in batches(e)] for e in range(epochs)]

        peer = copy.deepcopy(model)

        def peer_steps():
            """The plain loop, one step at a time: pre-made tensors, the same loss, Adam and clipping."""
            peer.load_state_dict(initial)
            peer.train()
            optimizer = torch.optim.Adam(peer.parameters(), lr=settings["lr"])
            for epoch in range(epochs):
                for ids in pre[epoch]:
                    target = ids[:, 1:]
                    mask = target != 0
                    loss = F.cross_entropy(peer(ids[:, :-1])[mask], target[mask], reduction="sum")
                    count = int(mask.sum())
                    optimizer.zero_grad()
                    (loss / count).backward()
                    torch.nn.utils.clip_grad_norm_(peer.parameters(), settings["grad_clip"])
                    optimizer.step()
                    yield count

        def interleaved() -> tuple[float, float]:
            """Both loops step by step, in turn (the peer's step between two of the template's), so that
            both see the same load at every moment; each loop's CPU time counted apart."""
            assert torch.get_num_threads() == 1 and torch.get_num_interop_threads() == 1
            model.load_state_dict(initial)
            torch.manual_seed(0)
            steps, peer = peer_steps(), {"s": 0.0, "tokens": 0}

            def batches_with_peer(epoch):
                for batch in batches(epoch):  # the loader's work counts as the template's
                    t = time.process_time()
                    peer["tokens"] += next(steps)
                    peer["s"] += time.process_time() - t
                    yield batch

            t0 = time.process_time()
            with contextlib.redirect_stdout(io.StringIO()):  # fit's per-epoch lines
                stats = common.fit(model, train.loss_function(model, "cpu"), batches_with_peer, settings, "cpu")
            ours_s = time.process_time() - t0 - peer["s"]  # checkpoints included: a bound in the peer's favour
            assert peer["tokens"] == stats["tokens"]
            return stats["tokens"] / ours_s, peer["tokens"] / peer["s"]

        runs = [interleaved() for _ in range(repeats)]
        a, b = [r[0] for r in runs], [r[1] for r in runs]
    ours_m, plain_m = statistics.median(a), statistics.median(b)
    paired = statistics.median(x / y for x, y in runs)
    print(
        f"  throughput {template:15s} template {ours_m:9.0f} tok/s   plain loop {plain_m:9.0f} tok/s   "
        f"ratio {paired:.3f} (median of the runs' ratios; spread {min(x / y for x, y in runs):.3f}-"
        f"{max(x / y for x, y in runs):.3f})",
        file=sys.stderr,
    )
    return {
        "template_tokens_per_s": ours_m,
        "plain_tokens_per_s": plain_m,
        "ratio": paired,
        "template_samples": a,
        "plain_samples": b,
    }


def loader_at_scale(base: Path, repeats: int) -> dict[str, float]:
    """ms per shuffled batch of 64 from 80,000 lines: ``dl.batches`` vs indexing one pre-padded tensor."""
    import numpy as np
    import torch

    from cotk_repro import data as loaders

    folder = base / "coco80k"
    folder.mkdir()
    lines = (REPO / "tests" / "fixtures" / "texygen" / "coco_train.txt").read_text().splitlines() * 40
    (folder / "train.txt").write_text("\n".join(lines) + "\n")
    for split in ("dev", "test"):
        (folder / f"{split}.txt").write_text("\n".join(lines[:500]) + "\n")
    dl = loaders.load("language-generation", folder, tokenizer="space", min_frequent_vocab_times=10, max_sent_length=50)
    whole = next(dl.batches("train", len(lines)))  # the peer's input: every sentence padded, beforehand
    padded, n = torch.from_numpy(whole["sent"]), len(lines)

    def ours() -> float:
        t0, k = time.process_time(), 0
        for batch in dl.batches("train", 64, shuffle=True, seed=1):
            torch.from_numpy(batch["sent"])
            k += 1
        return (time.process_time() - t0) / k * 1e3

    def plain() -> float:
        order = torch.from_numpy(np.random.default_rng(1).permutation(n))
        t0, k = time.process_time(), 0
        for start in range(0, n, 64):
            rows = padded[order[start : start + 64]]
            rows[:, : int((rows != 0).sum(1).max())]  # trimmed to the batch's longest, as the loader pads
            k += 1
        return (time.process_time() - t0) / k * 1e3

    a = [ours() for _ in range(repeats)]
    b = [plain() for _ in range(repeats)]
    out = {
        "lines": n,
        "batch_size": 64,
        "loader_ms_per_batch": statistics.median(a),
        "pretensorized_ms_per_batch": statistics.median(b),
    }
    print(
        f"  loader at 80k lines: dl.batches {out['loader_ms_per_batch']:.3f} ms/batch, pre-tensorized "
        f"{out['pretensorized_ms_per_batch']:.3f} ms/batch",
        file=sys.stderr,
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1, help="`cotk-repro run`s per template (median)")
    parser.add_argument("--repeats", type=int, default=8, help="interleaved throughput runs (median)")
    parser.add_argument("--epochs", type=int, default=2, help="epochs per throughput measurement")
    parser.add_argument("--data", type=Path, help="a language-generation folder for the throughput part")
    parser.add_argument("--skip-run", action="store_true", help="only the throughput part")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON on stdout")
    args = parser.parse_args()
    import torch

    torch.set_num_interop_threads(1)  # both loops run in this process with one intra- and one inter-op thread
    with tempfile.TemporaryDirectory(prefix="cotk-repro-bench-") as tmp:
        base = Path(tmp)
        report = {"threads": 1}
        if not args.skip_run:
            (base / "runs").mkdir()
            report["run_wall_s"] = run_wall_times(base / "runs", args.runs)
        (base / "tp").mkdir()
        data = corpus_folder(base, args.data)
        report["throughput"] = {
            t: throughput(t, base / "tp", data, args.epochs, args.repeats) for t in ("lm-gru", "lm-transformer")
        }
        report["loader_at_scale"] = loader_at_scale(base, 3)
    report["target_ratio"] = TARGET_RATIO
    report["target_met"] = all(v["ratio"] >= TARGET_RATIO for v in report["throughput"].values())
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for name, t in report.get("run_wall_s", {}).items():
            print(f"cotk-repro run ({name}, tiny): {t:.1f} s")
        for name, v in report["throughput"].items():
            print(
                f"{name}: template {v['template_tokens_per_s']:.0f} tokens/s vs plain loop "
                f"{v['plain_tokens_per_s']:.0f} tokens/s (ratio {v['ratio']:.3f}, "
                f"target >= {TARGET_RATIO})"
            )
        scale = report["loader_at_scale"]
        print(
            f"loader, batch of 64 from {scale['lines']} lines: {scale['loader_ms_per_batch']:.3f} ms "
            f"vs {scale['pretensorized_ms_per_batch']:.3f} ms pre-tensorized"
        )


if __name__ == "__main__":
    main()
