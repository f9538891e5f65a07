"""The cost of rendering a stranger's template in the bounded child: core/untrusted beside in-process Jinja, same run.

A protocol-like template (a few filters, a conditional) is rendered on short input lines by:

* ``in-process``: Jinja's immutable sandbox in this process, the template compiled once (the peer: what the
  protocol did before issue 45, with no memory bound and a time bound in the main thread only);
* ``child, one per call``: :func:`cotk_repro.core.untrusted.render_untrusted` with one context per call (a pipe
  round trip each: what a judge's per-item ``render`` costs);
* ``child, batch of 256``: one call per batch of 256 contexts (what ``generate`` does per generation batch).

Also the child's start (once per process) and a load of a protocol with 8 few-shot examples.

    python benchmarks/untrusted_templates.py [--n 5000] [--json]
"""

from __future__ import annotations

import argparse
import json
import time

TEMPLATE = "{% if input|length > 40 %}Long: {% endif %}Question: {{ input|trim|capitalize }}\nAnswer:"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    lines = [f"what is the number {i} plus {i}, in words? " * (1 + i % 3) for i in range(args.n)]

    from jinja2 import StrictUndefined
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    from cotk_repro.core import untrusted

    env = ImmutableSandboxedEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)
    compiled = env.from_string(TEMPLATE)
    t0 = time.perf_counter()
    peer = [compiled.render(input=line) for line in lines]
    in_process = time.perf_counter() - t0

    t0 = time.perf_counter()
    untrusted.render_untrusted("{{ input }}", [{"input": "start"}])
    start = time.perf_counter() - t0

    t0 = time.perf_counter()
    single = [untrusted.render_untrusted(TEMPLATE, [{"input": line}], names=["input"])[0] for line in lines]
    one_per_call = time.perf_counter() - t0

    t0 = time.perf_counter()
    batched: list[str] = []
    for i in range(0, len(lines), 256):
        contexts = [{"input": line} for line in lines[i : i + 256]]
        batched += untrusted.render_untrusted(TEMPLATE, contexts, names=["input"])
    batch = time.perf_counter() - t0
    assert peer == single == batched

    import tempfile
    from pathlib import Path

    from cotk_repro.llm import load_protocol

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "p.toml"
        shots = "".join(f'[[few_shot]]\ninput = "q{i}"\noutput = "a{i}"\n' for i in range(8))
        path.write_text(f"template = {json.dumps(TEMPLATE)}\nmax_new_tokens = 8\n{shots}", encoding="utf-8")
        t0 = time.perf_counter()
        load_protocol(path)
        load = time.perf_counter() - t0

    rows = {
        "in-process (peer), per rendering": in_process / args.n,
        "child, one per call, per rendering": one_per_call / args.n,
        "child, batch of 256, per rendering": batch / args.n,
        "child start (once per process)": start,
        "protocol load (8 few-shot examples)": load,
    }
    if args.json:
        print(json.dumps({k: round(v * 1e6, 1) for k, v in rows.items()}, indent=2))
        return
    for name, seconds in rows.items():
        print(f"{name:40} {seconds * 1e6:12.1f} µs")


if __name__ == "__main__":
    main()
