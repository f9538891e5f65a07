"""Entry: prompt a language model through protocol.toml, score its answers, write result.json.

`cotk-repro run` runs this file with the arguments in cotk-repro.toml and turns result.json into a
record. Steps: load the protocol; generate one answer per input line with the `hf` generator (greedy,
so a rerun and a reproduction give the same bytes); score the answers with Distinct and an LLM judge;
put the protocol's hash into every metric's hash (`stamp_protocol`) and the system's identity into every
signature (`stamp_system`); save. `python evaluate.py --help` lists the options.
"""

from __future__ import annotations

import argparse
from pathlib import Path

#: ``tiny``: the models make_models.py builds here on first use (seconds, no download)
PRESETS = {
    "tiny": dict(system="tiny-models/system", judge="tiny-models/judge", batch_size=4),
}
OUTPUTS = Path("outputs")  # the generated answers, for reading (ignored by git; the record keeps the scores)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    parser.add_argument("--system", help="the model evaluated: a local folder or hf:NAME (default: the preset's)")
    parser.add_argument("--judge", help="the judge: a local folder, hf:NAME or openai:BASE_URL#MODEL")
    parser.add_argument("--protocol", default="protocol.toml", help="the prompt protocol (docs/llm.md)")
    parser.add_argument("--inputs", default="data/inputs.txt", help="one input (question) a line")
    parser.add_argument("--batch-size", type=int, help="prompts per forward pass (never changes an output)")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads (fixed: the same numbers everywhere)")
    parser.add_argument("--result", default="result.json")
    args = parser.parse_args()
    settings = dict(PRESETS[args.preset])
    for key in ("system", "judge", "batch_size"):
        if getattr(args, key) is not None:
            settings[key] = getattr(args, key)
    args.settings = settings
    return args


def tiny_model(kind: str, where: str) -> None:
    """Build the tiny preset's ``kind`` model where the preset puts it, when it is not there yet (another
    folder is never built: ``python make_models.py system tiny-models/other --seed 1`` makes one)."""
    path = Path(where)
    if where == PRESETS["tiny"][kind] and not (path / "config.json").is_file():
        from make_models import build

        print(f"building the tiny {kind} model {path} (make_models.py)", flush=True)
        build(kind, path, seed=0)


def main() -> None:
    args = parse_args()
    settings = args.settings

    import torch

    from cotk_repro import save_result
    from cotk_repro.llm import generate_outputs, load_protocol, stamp_protocol
    from cotk_repro.llm.system import stamp_system
    from cotk_repro.metrics import get_metric

    torch.set_num_threads(args.threads)
    tiny_model("system", settings["system"])
    tiny_model("judge", settings["judge"])
    protocol = load_protocol(args.protocol)
    inputs = [line.strip() for line in Path(args.inputs).read_text(encoding="utf-8").splitlines() if line.strip()]

    # the cache lives in the project (ignored by git): a reproduction, from a fresh checkout, generates again
    generation = generate_outputs(
        "hf",
        {"model": settings["system"], "batch_size": settings["batch_size"]},
        inputs,
        protocol=protocol,
        cache_dir=OUTPUTS / "cache",
    )
    outputs = generation.outputs
    OUTPUTS.mkdir(exist_ok=True)
    (OUTPUTS / "outputs.txt").write_text("".join(o + "\n" for o in outputs), encoding="utf-8")

    results: dict = {}
    for n in (1, 2):
        results.update(get_metric("distinct", ngram=n).compute(outputs))
    judge = get_metric("llm-judge", judge=settings["judge"], scale="1-5")
    results.update(judge.compute(outputs, None, queries=inputs))
    results = stamp_system(stamp_protocol(results, protocol), generation.system)
    save_result(results, args.result, system=generation.system, protocol=protocol)

    print(f"system: {generation.system['generator']} {generation.system['settings'].get('model')}")
    print(f"protocol: {protocol.sha256[:12]} ({args.protocol})")
    for question, answer in list(zip(inputs, outputs))[:3]:
        print(f"  {question} -> {answer}")
    print("wrote", args.result)


if __name__ == "__main__":
    from cotk_repro.errors import CotkError

    try:
        main()
    except CotkError as exc:  # a missing model, a bad protocol, an unreachable judge: one sentence, no traceback
        raise SystemExit(f"error: {exc}") from None
