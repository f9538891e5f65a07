"""Benchmark: exact linear-time BLEU family vs its peers, in the same run.

    python benchmarks/bleu_family.py [--data TEXYGEN_FOLDER] [--nltk-subset 200] [--nltk-probe 3]
                                     [--cotk-sample 500] [--no-cotk] [--cache-dir DIR]
                                     [--cotk-rule-sample 1000] [--only-cotk-rule]

On ``instances/*.txt`` (six models, ~10k sentences each) and ``coco_test.txt`` (10k captions) of the
Texygen folder ``--data`` (see benchmarks/_data.py for where to get it):

1. Self-BLEU-4 of every full set (ours), against the NLTK ``sentence_bleu`` loop (Texygen/CoTK's method) on
   the first ``--nltk-subset`` sentences: values compared per sentence, time extrapolated quadratically to the
   full set. Target: all ~10k MLE sentences in <= 2 s.
2. Fw/Bw/H-BLEU-4 of the six models vs the full test set (ours), against NLTK ``sentence_bleu`` of
   ``--nltk-probe`` sentences per direction against the full other set (values compared, time extrapolated
   linearly). Target: the six-model table in <= 15 s.
3. Corpus BLEU-4 of MLE vs the test set paired line by line: ours (metric, tokenization and hash included) vs
   sacrebleu (``tokenize='none'``, on the same WordPunct tokens) vs NLTK ``corpus_bleu``. Target: at least as
   fast as sacrebleu.
4. CoTK 0.1.0 (``SelfBleuCorpusMetric``, ``FwBwBleuCorpusMetric``) in a separate virtual environment created
   under the cache dir (``pip install cotk==0.1.0``), on ``--cotk-sample`` sentences (its own sampling size),
   values compared with ours on the same sentences, time extrapolated quadratically.
5. The CoTK rule: Self-BLEU-4 with CoTK's sampling (``sample_mode="cotk"``: seeded shuffle of the whole MLE
   set, the first ``--cotk-rule-sample`` kept, CoTK's default 1,000) beside CoTK 0.1.0's
   ``SelfBleuCorpusMetric(sample=1000)`` on the same sentences: values equal, the time of each
   (``--only-cotk-rule`` runs this section alone).

Timings are wall-clock on the machine it runs on; peers run in the same process/run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from _data import add_data_option, require  # noqa: E402  (benchmarks/ is on sys.path)

MODELS = ["mle", "seq", "maligan", "rank", "leakgan", "textgan"]

COTK_PEER = r'''
import json, re, sys, time
from cotk.metric import SelfBleuCorpusMetric, FwBwBleuCorpusMetric

class DL:
    """The smallest CoTK-like dataloader the BLEU metrics need: words <-> ids."""
    def __init__(self):
        self.words = ["<pad>", "<unk>", "<go>", "<eos>"]
        self.index = {w: i for i, w in enumerate(self.words)}
    def ids(self, toks):
        out = []
        for t in toks:
            if t not in self.index:
                self.index[t] = len(self.words); self.words.append(t)
            out.append(self.index[t])
        return out + [3]
    def trim_in_ids(self, ids):
        ids = list(ids)
        return ids[:ids.index(3)] if 3 in ids else ids
    def convert_ids_to_tokens(self, ids, remove_special=True, trim=True):
        return [self.words[i] for i in self.trim_in_ids(ids) if i > 3 or i == 1]
    def get_special_tokens_mapping(self):
        return {"pad": "<pad>", "unk": "<unk>", "go": "<go>", "eos": "<eos>"}

tok = re.compile(r"\w+|[^\w\s]+").findall
args = json.loads(sys.argv[1])
k = args["sample"]
hyps = [tok(l) for l in open(args["hyps"], encoding="utf-8").read().splitlines()][:k]
refs = [tok(l) for l in open(args["refs"], encoding="utf-8").read().splitlines()][:k]
dl = DL()
out = {}
m = SelfBleuCorpusMetric(dl, sample=k)
m.forward({"gen": [dl.ids(s) for s in hyps]})
t = time.perf_counter(); r = m.close(); out["self"] = [r["self-bleu"], time.perf_counter() - t]
m = FwBwBleuCorpusMetric(dl, [dl.ids(s) for s in refs], sample=k)
m.forward({"gen": [dl.ids(s) for s in hyps]})
t = time.perf_counter(); r = m.close()
out["fwbw"] = [r["fw-bleu"], r["bw-bleu"], r["fw-bw-bleu"], time.perf_counter() - t]
print(json.dumps(out))
'''

# CoTK's own sampling: the whole set in, SelfBleuCorpusMetric shuffles (seed 1229) and keeps `sample`
COTK_RULE_PEER = (
    COTK_PEER.split("tok = re.compile")[0]
    + r"""
tok = re.compile(r"\w+|[^\w\s]+").findall
args = json.loads(sys.argv[1])
hyps = [tok(l) for l in open(args["hyps"], encoding="utf-8").read().splitlines()]
dl = DL()
m = SelfBleuCorpusMetric(dl, sample=args["sample"], seed=1229)
m.forward({"gen": [dl.ids(s) for s in hyps]})
t = time.perf_counter(); r = m.close()
print(json.dumps({"self": [r["self-bleu"], time.perf_counter() - t]}))
"""
)


def dict_self_bleu(sents, max_n=4):
    """The same linear algorithm with plain dict counting (no numpy), to measure the numpy choice against."""
    import bisect
    from collections import Counter

    from cotk_repro.metrics.bleu import smoothed_precisions

    per_sent = []
    top = {}
    for toks in sents:
        c = Counter()
        for n in range(1, max_n + 1):
            c.update(tuple(toks[i : i + n]) for i in range(len(toks) - n + 1))
        per_sent.append(c)
        for g, k in c.items():
            t = top.get(g)
            if t is None:
                top[g] = [k, 0]
            elif k > t[0]:
                t[1], t[0] = t[0], k
            elif k > t[1]:
                t[1] = k
    lens = sorted(len(t) for t in sents)
    count_len = Counter(lens)
    uniq = sorted(count_len)
    scores = []
    for toks, c in zip(sents, per_sent):
        nums = [0] * max_n
        for g, k in c.items():
            if "<unk>" in g:
                continue
            t1, t2 = top[g]
            nums[len(g) - 1] += min(k, t1 if k < t1 else t2)
        h = len(toks)
        dens = [max(1, h - n + 1) for n in range(1, max_n + 1)]
        cands = uniq if count_len[h] > 1 else [x for x in uniq if x != h]
        j = bisect.bisect_left(cands, h)
        opts = cands[max(0, j - 1) : j + 1]
        r = min(opts, key=lambda x: (abs(x - h), x))
        if nums[0] == 0:
            scores.append(0.0)
            continue
        p = smoothed_precisions(nums, dens, "method1")
        bp = 1 if h > r else (0 if h == 0 else math.exp(1 - r / h))
        scores.append(bp * math.exp(math.fsum(0.25 * math.log(x) for x in p if x > 0)))
    return scores


def timed(fn, repeat=1):
    best, value = math.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t)
    return value, best


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def cotk_venv(cache: Path) -> tuple[Path | None, str]:
    """A venv with cotk 0.1.0 under the cache dir (created once); (python, note)."""
    venv = cache / "cotk-0.1.0"
    py = venv / "bin" / "python"
    check = [str(py), "-c", "import cotk.metric"]
    if py.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return py, f"cached venv {venv}"
    cache.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
        pip = [str(py), "-m", "pip", "install", "-q"]
        r = subprocess.run(pip + ["cotk==0.1.0"], capture_output=True, text=True, timeout=900)
        if r.returncode != 0:
            return None, "pip install cotk==0.1.0 failed: " + (r.stderr.strip().splitlines() or ["?"])[-1]
        if subprocess.run(check, capture_output=True).returncode != 0:
            r = subprocess.run(pip + ["torch==2.13.0"], capture_output=True, text=True, timeout=900)
            if r.returncode != 0 or subprocess.run(check, capture_output=True).returncode != 0:
                return None, "cotk 0.1.0 installed but `import cotk.metric` fails, also with torch==2.13.0"
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"could not create the CoTK venv: {exc}"
    return py, f"new venv {venv}"


def run_cotk_peer(args: argparse.Namespace, script: str, payload: dict) -> tuple[dict | None, str]:
    """Run a CoTK 0.1.0 script in its venv (CPU_COUNT = this machine's): (its JSON output or None, a note)."""
    if args.no_cotk:
        return None, "CoTK 0.1.0 skipped (--no-cotk)"
    py, note = cotk_venv(args.cache_dir)
    if py is None:
        return None, f"CoTK 0.1.0 could not be installed here: {note}"
    env = dict(os.environ, CPU_COUNT=str(os.cpu_count() or 1))
    r = subprocess.run([str(py), "-c", script, json.dumps(payload)], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        return None, f"CoTK run failed: {r.stderr.strip().splitlines()[-1:]}"
    return json.loads(r.stdout.strip().splitlines()[-1]), note


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_option(ap)
    ap.add_argument("--nltk-subset", type=int, default=200, help="sentences for the NLTK Self-BLEU loop")
    ap.add_argument("--nltk-probe", type=int, default=3, help="sentences per direction for the NLTK Fw/Bw loop")
    ap.add_argument("--cotk-sample", type=int, default=500, help="CoTK's sample size (its default is 1000)")
    ap.add_argument("--no-cotk", action="store_true", help="skip the CoTK 0.1.0 peer")
    ap.add_argument("--cotk-rule-sample", type=int, default=1000, help="sample of the CoTK-rule Self-BLEU (section 5)")
    ap.add_argument("--only-cotk-rule", action="store_true", help="run section 5 (the CoTK rule vs CoTK) alone")
    ap.add_argument(
        "--cache-dir",
        type=Path,
        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "cotk-repro-bench",
    )
    args = ap.parse_args()

    from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu, sentence_bleu

    from cotk_repro.metrics import get_metric
    from cotk_repro.metrics.bleu import self_bleu_scores, set_bleu_scores
    from cotk_repro.metrics.ngrams import tokenize_texts

    tx = args.data
    require(tx, "coco_test.txt", *(f"instances/{m}.txt" for m in MODELS))
    test = lines(tx / "coco_test.txt")
    gens = {m: lines(tx / "instances" / f"{m}.txt") for m in MODELS}
    sm1 = SmoothingFunction().method1
    w4 = [0.25] * 4
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; test set {len(test)} lines; "
        f"models {', '.join(f'{m} {len(v)}' for m, v in gens.items())}"
    )
    if args.only_cotk_rule:
        cotk_rule_section(args, tx, gens["mle"])
        return

    # 1. Self-BLEU ---------------------------------------------------------------------------------
    print("\n== Self-BLEU-4, whole sets (ours) vs NLTK sentence_bleu loop on a subset ==")
    print(
        f"{'model':8} {'N':>6} {'self-bleu':>10} {'ours s':>8} | {'subset':>6} {'NLTK s':>8} "
        f"{'NLTK full s (extrap.)':>22} {'max |diff|':>10} {'speedup':>9}"
    )
    self_times = {}
    for m, sents in gens.items():
        res, t_ours = timed(lambda sents=sents: get_metric("self-bleu").compute(sents), repeat=2)
        self_times[m] = t_ours
        k = min(args.nltk_subset, len(sents))
        sub = tokenize_texts(sents[:k])
        ref_vals, t_nltk = timed(
            lambda sub=sub, k=k: [
                sentence_bleu(sub[:i] + sub[i + 1 :], sub[i], smoothing_function=sm1) for i in range(k)
            ]
        )
        ours_sub = self_bleu_scores(sub, 4, w4, "method1")
        diff = max(abs(a - b) for a, b in zip(ours_sub, ref_vals))
        full = t_nltk * (len(sents) / k) ** 2
        print(
            f"{m:8} {len(sents):6d} {res['self-bleu']:10.6f} {t_ours:8.3f} | {k:6d} {t_nltk:8.2f} "
            f"{full:22.0f} {diff:10.1e} {full / t_ours:8.0f}x"
        )
    mle_tok = tokenize_texts(gens["mle"])
    dict_scores, t_dict = timed(lambda: dict_self_bleu(mle_tok), repeat=2)
    np_scores, t_np = timed(lambda: self_bleu_scores(mle_tok, 4, w4, "method1"), repeat=2)
    print(
        f"counting choice, MLE Self-BLEU from tokens: numpy {t_np:.3f} s vs plain dicts {t_dict:.3f} s "
        f"(same algorithm, identical per-sentence values: {dict_scores == np_scores})"
    )
    mle_t = self_times["mle"]
    print(f"target: Self-BLEU of all MLE sentences <= 2 s: {mle_t:.3f} s -> {'MET' if mle_t <= 2 else 'MISSED'}")

    # 2. Fw/Bw/H-BLEU --------------------------------------------------------------------------------
    print("\n== Fw/Bw/H-BLEU-4 vs the full test set (ours) ==")
    t0 = time.perf_counter()
    table = {m: get_metric("fw-bw-bleu").compute(sents, test) for m, sents in gens.items()}
    t_table = time.perf_counter() - t0
    print(f"{'model':8} {'fw-bleu':>9} {'bw-bleu':>9} {'fw-bw-bleu':>10}")
    for m, r in table.items():
        print(f"{m:8} {r['fw-bleu']:9.6f} {r['bw-bleu']:9.6f} {r['fw-bw-bleu']:10.6f}")
    # NLTK probe on MLE: a few sentences per direction against the full other set
    ht, rt = tokenize_texts(gens["mle"]), tokenize_texts(test)
    fw_all, bw_all = set_bleu_scores(ht, rt, 4, w4, "method1", both=True)
    p = args.nltk_probe
    fw_ref, t_fw = timed(lambda: [sentence_bleu(rt, h, smoothing_function=sm1) for h in ht[:p]])
    bw_ref, t_bw = timed(lambda: [sentence_bleu(ht, r, smoothing_function=sm1) for r in rt[:p]])
    diff = max(abs(a - b) for a, b in zip(fw_all[:p] + bw_all[:p], fw_ref + bw_ref))
    per_model = t_fw / p * len(ht) + t_bw / p * len(rt)
    nltk_table = sum(t_fw / p * len(g) + t_bw / p * len(rt) for g in gens.values())
    print(
        f"ours, six models: {t_table:.2f} s; NLTK loop (probe {p}+{p} sentences of MLE: {t_fw / p:.3f} s fw, "
        f"{t_bw / p:.3f} s bw per sentence; max |diff| {diff:.1e}) extrapolated: {per_model / 3600:.2f} h per "
        f"model, {nltk_table / 3600:.1f} h for six -> speedup {nltk_table / t_table:.0f}x"
    )
    print(f"target: six-model Fw/Bw/H table <= 15 s: {t_table:.2f} s -> {'MET' if t_table <= 15 else 'MISSED'}")

    # 3. Corpus BLEU ---------------------------------------------------------------------------------
    print("\n== Corpus BLEU-4, MLE vs test set paired line by line ==")
    hyps = gens["mle"]
    refs = test[: len(hyps)]
    ours, t_ours = timed(lambda: get_metric("bleu").compute(hyps, [[r] for r in refs])["bleu"], repeat=3)
    from sacrebleu.metrics import BLEU

    h_tok = [" ".join(t) for t in tokenize_texts(hyps)]
    r_tok = [" ".join(t) for t in tokenize_texts(refs)]
    sb = BLEU(tokenize="none", smooth_method="floor", smooth_value=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import logging

        logging.getLogger("sacrebleu").setLevel(logging.ERROR)
        sacre, t_sacre = timed(lambda: sb.corpus_score(h_tok, [r_tok]).score / 100, repeat=3)
    nl, t_nl = timed(
        lambda: corpus_bleu(
            [[r.split()] for r in r_tok], [h.split() for h in h_tok], smoothing_function=SmoothingFunction().method3
        )
    )
    print(f"ours (text in: tokenize + count + hash) {ours:.12f} {t_ours:.3f} s")
    print(
        f"sacrebleu 'none' on the same tokens     {sacre:.12f} {t_sacre:.3f} s  (its own smoothing; "
        f"see docs/bleu-semantics.md 9 on denominators)"
    )
    print(f"NLTK corpus_bleu method3 on same tokens {nl:.12f} {t_nl:.3f} s  |ours-NLTK| = {abs(ours - nl):.1e}")
    print(
        f"speedup vs sacrebleu {t_sacre / t_ours:.2f}x, vs NLTK {t_nl / t_ours:.2f}x; target: at least as fast "
        f"as sacrebleu -> {'MET' if t_ours <= t_sacre else 'MISSED'}"
    )

    # 4. CoTK 0.1.0 ----------------------------------------------------------------------------------
    print("\n== CoTK 0.1.0 (separate venv) ==")
    k = args.cotk_sample
    out, note = run_cotk_peer(
        args, COTK_PEER, {"sample": k, "hyps": str(tx / "instances" / "mle.txt"), "refs": str(tx / "coco_test.txt")}
    )
    if out is None:
        print(note)
        cotk_rule_section(args, tx, gens["mle"])
        return
    ours_self = get_metric("self-bleu").compute(gens["mle"][:k])["self-bleu"]
    ours_fb, t_fb = timed(lambda: get_metric("fw-bw-bleu").compute(gens["mle"][:k], test[:k]))
    c_self, t_cself = out["self"]
    c_fw, c_bw, c_h, t_cfb = out["fwbw"]
    n_full = len(gens["mle"])
    print(
        f"{note}; CoTK runs one process below 1,000 sentences and a pool of {os.cpu_count()} from 1,000, so "
        f"its full-size extrapolations below may be up to {os.cpu_count()}x too high"
    )
    print(
        f"Self-BLEU-4, {k} MLE sentences: CoTK {c_self:.12f} in {t_cself:.2f} s, ours {ours_self:.12f} "
        f"(|diff| {abs(c_self - ours_self):.1e}); CoTK extrapolated to all {n_full}: "
        f"{t_cself * (n_full / k) ** 2:.0f} s vs ours {self_times['mle']:.3f} s "
        f"-> {t_cself * (n_full / k) ** 2 / self_times['mle']:.0f}x"
    )
    print(
        f"Fw/Bw/H-BLEU-4, {k} x {k}: CoTK {c_fw:.6f}/{c_bw:.6f}/{c_h:.6f} in {t_cfb:.2f} s, ours "
        f"{ours_fb['fw-bleu']:.6f}/{ours_fb['bw-bleu']:.6f}/{ours_fb['fw-bw-bleu']:.6f} in {t_fb:.3f} s "
        f"(max |diff| {max(abs(c_fw - ours_fb['fw-bleu']), abs(c_bw - ours_fb['bw-bleu'])):.1e}); "
        f"CoTK extrapolated to six full models: {6 * t_cfb * (n_full / k) ** 2 / 3600:.1f} h vs ours "
        f"{t_table:.2f} s"
    )
    cotk_rule_section(args, tx, gens["mle"])


def cotk_rule_section(args: argparse.Namespace, tx: Path, mle: list[str]) -> None:
    """5. Self-BLEU with CoTK's sampling rule (ours, native) beside CoTK 0.1.0 on the same sentences."""
    from cotk_repro.metrics import get_metric

    k = args.cotk_rule_sample
    print(f"\n== The CoTK rule: Self-BLEU-4, sample_mode='cotk', sample {k} of {len(mle)} MLE sentences ==")
    ours, t_ours = timed(lambda: get_metric("self-bleu", sample=k, sample_mode="cotk").compute(mle), repeat=3)
    print(
        f"ours (text in: pick, tokenize, count, hash) {ours['self-bleu']:.15f} in {t_ours:.3f} s  "
        f"[{ours['self-bleu signature']}]"
    )
    out, note = run_cotk_peer(args, COTK_RULE_PEER, {"sample": k, "hyps": str(tx / "instances" / "mle.txt")})
    if out is None:
        print(note)
        return
    c_self, t_c = out["self"]
    print(
        f"CoTK 0.1.0 SelfBleuCorpusMetric(sample={k}, seed=1229) {c_self:.15f} in {t_c:.2f} s "
        f"(a pool of {os.cpu_count()} processes; {note})"
    )
    print(
        f"|diff| {abs(c_self - ours['self-bleu']):.1e} (CoTK sums its pool's results in any order); "
        f"speedup {t_c / t_ours:.0f}x"
    )


if __name__ == "__main__":
    main()
