"""Benchmark: the generators ``hf`` and ``openai`` on a small GPT-2-shaped model, each beside its peer in the same run.

    python plugins/cotk-repro-lm/benchmarks/lm_generate.py [--n 64] [--new 32] [--layers 4] [--dim 128]
        [--vocab 4000] [--threads 1] [--batch-size 8] [--requests 32] [--serve-args "--continuous-batching"]
        [--no-serve] [--device cpu] [--json]

Prompts: the first ``--n`` lines of the repository's Texygen fixtures (COCO captions and model samples); model:
``fluency.py``'s GPT-2 (``--layers`` layers, ``--dim`` wide, a ``--vocab``-piece BPE, seeded random weights),
greedy, ``--new`` new tokens. Model loading is outside every timing; each figure is the best of 3 rounds (5,
alternating with the peer, for ``hf`` against the plain loop).

1. ``hf`` at ``--batch-size`` against a plain batched ``model.generate`` loop at the same batch size (the
   tokenizer with ``padding_side="left"``, ``padding=True``, ``batch_decode``): outputs must be equal; target:
   within 5%.
2. ``hf`` at batch 8 against batch 1 (outputs equal): target >= 3x the throughput.
3. ``openai`` with ``concurrency=8`` against ``concurrency=1`` (sequential requests) on ``--requests`` prompts,
   against a real ``transformers serve`` on the same model folder (``--serve-args`` added to its command line;
   the default, continuous batching, is what lets a server answer 8 requests together): outputs must equal
   ``hf``'s; target >= 3x.

Throughput: generated tokens (the ``hf`` outputs' tokens, identical for every contender) per second.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from fluency import build_model, texts  # noqa: E402  (the same model and corpus as the fluency benchmark)


def best_of(rounds: int, fn):
    times, out = [], None
    for _ in range(rounds):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def plain_loop(model_dir: Path, prompts: list[str], new: int, batch_size: int, device: str):
    """The peer: what a user writes with transformers alone."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir, padding_side="left")
    tok.pad_token = tok.pad_token or tok.eos_token
    model = AutoModelForCausalLM.from_pretrained(model_dir).to(device).eval()

    def run():
        out = []
        for i in range(0, len(prompts), batch_size):
            enc = tok(prompts[i : i + batch_size], return_tensors="pt", padding=True).to(device)
            with torch.inference_mode():
                seq = model.generate(**enc, max_new_tokens=new, do_sample=False, pad_token_id=tok.pad_token_id)
            out.extend(tok.batch_decode(seq[:, enc["input_ids"].shape[1] :], skip_special_tokens=True))
        return out

    return run


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(model_dir: Path, extra: list[str], device: str) -> tuple[subprocess.Popen, str]:
    exe = shutil.which("transformers", path=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    if exe is None:
        raise SystemExit("the transformers command is not installed (pip install transformers[serving])")
    port = free_port()
    args = [exe, "serve", str(model_dir), "--host", "127.0.0.1", "--port", str(port), "--device", device, *extra]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"transformers serve exited with {proc.returncode}: {proc.stderr.read()[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                return proc, f"http://127.0.0.1:{port}/v1"
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit("transformers serve did not answer /health within 180 s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--new", type=int, default=32)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=4000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--requests", type=int, default=32)
    ap.add_argument("--serve-args", default="--continuous-batching")
    ap.add_argument("--no-serve", action="store_true", help="skip the openai part")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    torch.set_num_threads(args.threads)
    from cotk_repro_lm.generation.endpoint import OpenAIGenerator
    from cotk_repro_lm.generation.hf import HFGenerator

    prompts = texts(args.n)
    result: dict = {"device": args.device, "threads": args.threads, "prompts": args.n, "max_new_tokens": args.new}
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = build_model(Path(tmp), args.layers, args.dim, args.vocab)
        gen = HFGenerator(str(model_dir), max_new_tokens=args.new, batch_size=args.batch_size, device=args.device)
        gen1 = HFGenerator(str(model_dir), max_new_tokens=args.new, batch_size=1, device=args.device)
        peer = plain_loop(model_dir, prompts, args.new, args.batch_size, args.device)
        gen.generate(prompts[:8]), peer()  # warm-up
        # alternate the contenders round by round, so a busy neighbour slows both alike
        t_gen, t_peer, outs, peer_out = [], [], None, None
        for _ in range(5):
            t, outs = best_of(1, lambda: gen.generate(prompts))
            t_gen.append(t)
            t, peer_out = best_of(1, peer)
            t_peer.append(t)
        tokens = sum(len(ids) for ids in gen.generate_ids(prompts))
        t1, outs1 = best_of(3, lambda: gen1.generate(prompts))
        result["tokens"] = tokens
        result["hf"] = {
            f"hf batch {args.batch_size} tok/s": round(tokens / min(t_gen), 1),
            f"plain model.generate batch {args.batch_size} tok/s": round(tokens / min(t_peer), 1),
            "hf / plain": round(min(t_peer) / min(t_gen), 3),
            "outputs equal": outs == peer_out,
            "hf batch 1 tok/s": round(tokens / t1, 1),
            f"batch {args.batch_size} / batch 1": round(t1 / min(t_gen), 2),
            "batch 1 outputs equal": outs1 == outs,
        }
        if not args.no_serve:
            reqs = prompts[: args.requests]
            want = outs[: args.requests]
            req_tokens = sum(len(ids) for ids in gen.generate_ids(reqs))
            proc, base_url = start_server(model_dir, shlex.split(args.serve_args), args.device)
            try:
                seq = OpenAIGenerator(base_url, str(model_dir), max_new_tokens=args.new, concurrency=1)
                par = OpenAIGenerator(base_url, str(model_dir), max_new_tokens=args.new, concurrency=8)
                seq.generate(reqs[:4]), par.generate(reqs[:8])  # warm-up (the server loads the model lazily)
                t_seq, out_seq = best_of(3, lambda: seq.generate(reqs))
                t_par, out_par = best_of(3, lambda: par.generate(reqs))
            finally:
                proc.terminate()
                proc.wait(timeout=30)
            result["openai"] = {
                "serve args": args.serve_args,
                "requests": len(reqs),
                "sequential tok/s": round(req_tokens / t_seq, 1),
                "concurrency 8 tok/s": round(req_tokens / t_par, 1),
                "concurrency 8 / sequential": round(t_seq / t_par, 2),
                "sequential outputs equal hf": out_seq == want,
                "concurrency 8 outputs equal hf": out_par == want,
            }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for section in ("hf", "openai"):
            for key, value in result.get(section, {}).items():
                print(f"{section:7} {key:45} {value}")
        print(f"(device {result['device']}, {args.threads} thread(s), {args.n} prompts, {tokens} generated tokens)")


if __name__ == "__main__":
    main()
