"""Texygen's training protocol and its evaluation, shared by the seven templates.

MLE pretraining of the generator (``pre_gen_epochs``) and of the discriminator (``pre_dis_epochs``, each
``dis_steps`` mini-batches), then ``adv_epochs`` adversarial epochs (one generator update and ``dis_steps``
discriminator mini-batches each; MLE: one more MLE epoch; LeakGAN: ``leak_mle_epochs`` MLE epochs every
``leak_interleave``; GSGAN: no pretraining). Every ``eval_every`` generator epochs (pretraining included, as
the paper's figures count them) and at the end, the metrics with their hashes: synthetic mode NLL-oracle,
NLL-test and EmbSim (the oracle's and the generator's embedding tables, Texygen's code); real mode NLL-test,
BLEU, Self-BLEU and EmbSim (gensim Word2Vec on the generated and the test sentences).

The result file carries each final value under its name and each curve point as ``NAME@epoch-N``.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from cotk_repro.errors import CotkError

from .models import MODELS
from .models.generator import GenConfig

if TYPE_CHECKING:  # at run time each mode imports its own data module, where it is used
    from .data import OracleData
    from .realdata import RealData

_FILTERS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20)
_NUM_FILTERS = (100, 200, 200, 200, 200, 100, 100, 100, 100, 100, 160, 160)

#: the paper's protocol (Texygen's defaults: models/*/ and the paper, section 4)
PAPER = {
    "mode": "synthetic",
    "data": "data",
    "seed": 0,
    "vocab_size": 5000,
    "seq_len": 20,
    "oracle_emb_dim": 32,
    "oracle_hidden_dim": 32,
    "n_train": 10000,
    "n_test": 10000,
    "emb_dim": 32,
    "hidden_dim": 32,
    "batch_size": 64,
    "gen_lr": 0.01,
    "dis_lr": 1e-4,
    "grad_clip": 5.0,
    "pre_gen_epochs": 80,
    "pre_dis_epochs": 80,
    "adv_epochs": 100,
    "dis_steps": 15,
    "rollout_num": 16,
    "rollout_update_rate": 0.8,
    "dis_emb_dim": 64,
    "filter_sizes": _FILTERS,
    "num_filters": _NUM_FILTERS,
    "dis_dropout": 0.25,
    "rank_gamma": 1.0,
    "gumbel_tau": 1.0,
    "textgan_tau": 1.0,
    "leak_goal_dim": 16,
    "leak_step_size": 4,
    "leak_alpha": 1.0,
    "leak_interleave": 10,
    "leak_mle_epochs": 5,
    "eval_every": 5,
    "eval_samples": 10000,
    "embsim_rows": 0,
    "threads": 1,
    "pretrained": "",
}
#: seconds on one CPU thread; the same protocol at toy sizes
TINY = {
    **PAPER,
    "vocab_size": 40,
    "seq_len": 8,
    "oracle_emb_dim": 16,
    "oracle_hidden_dim": 16,
    "n_train": 1024,
    "n_test": 256,
    "emb_dim": 16,
    "hidden_dim": 16,
    "batch_size": 64,
    "gen_lr": 0.005,
    "pre_gen_epochs": 5,
    "pre_dis_epochs": 2,
    "adv_epochs": 3,
    "dis_steps": 3,
    "rollout_num": 2,
    "dis_emb_dim": 16,
    "filter_sizes": (2, 3, 4),
    "num_filters": (16, 16, 16),
    "leak_interleave": 2,
    "leak_mle_epochs": 1,
    "leak_step_size": 2,
    "leak_goal_dim": 8,
    "eval_every": 1,
    "eval_samples": 1024,
}
#: the scaled-down CPU benchmark of docs/texygen.md (examples/texygen-synthetic)
CPU = {
    **PAPER,
    "vocab_size": 500,
    "seq_len": 20,
    "n_train": 2000,
    "n_test": 1000,
    "pre_gen_epochs": 20,
    "pre_dis_epochs": 5,
    "adv_epochs": 10,
    "dis_steps": 5,
    "rollout_num": 4,
    "filter_sizes": (2, 3, 4, 5),
    "num_filters": (32, 32, 32, 32),
    "eval_every": 5,
    "eval_samples": 1000,
    "leak_interleave": 5,
    "leak_mle_epochs": 1,
}
PRESETS = {"tiny": TINY, "cpu": CPU, "paper": PAPER}
#: models trained from random weights without MLE pretraining
NO_PRETRAIN = {"gsgan"}


class ProtocolError(CotkError):
    """A setting or a combination that cannot be trained (one sentence)."""


def settings_for(preset: str, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """A preset's settings with ``overrides`` (same keys, same types); a bad key or value is one sentence."""
    if preset not in PRESETS:
        raise ProtocolError(f"unknown preset {preset!r}; presets: {', '.join(PRESETS)}")
    s = dict(PRESETS[preset])
    for key, value in (overrides or {}).items():
        if key not in s:
            raise ProtocolError(f"unknown setting {key!r}")
        s[key] = value
    if s["mode"] not in ("synthetic", "real"):
        raise ProtocolError(f"mode must be 'synthetic' or 'real', got {s['mode']!r}")
    for key in (
        "n_train",
        "n_test",
        "batch_size",
        "eval_every",
        "eval_samples",
        "dis_steps",
        "rollout_num",
        "threads",
        "leak_interleave",
    ):
        value = s[key]
        if not isinstance(value, int) or value < 1:
            raise ProtocolError(f"{key} must be a positive integer, got {value!r}")
    return s


def check_model(model: str, s: dict[str, Any]) -> None:
    if model not in MODELS:
        raise ProtocolError(f"unknown model {model!r}; models: {', '.join(MODELS)}")
    if model not in NO_PRETRAIN and model != "mle" and s["pre_gen_epochs"] < 1 and not s["pretrained"]:
        raise ProtocolError(
            f"{model} needs a pretrained generator: set pre_gen_epochs above 0 or pretrained to a generator file"
        )
    if s["pretrained"] and not Path(s["pretrained"]).is_file():
        raise ProtocolError(f"the pretrained generator file {s['pretrained']} is missing")


def model_class(model: str):
    module = importlib.import_module(f"cotk_repro_texygen.models.{model}")
    return next(
        v
        for v in vars(module).values()
        if isinstance(v, type) and getattr(v, "name", None) == model and v.__module__ == module.__name__
    )


class Run:
    """One training run: the data, the model, the evaluation, the result entries."""

    def __init__(self, model: str, s: dict[str, Any], log: Callable[[str], None] = print):
        check_model(model, s)
        self.model_name, self.s, self.log = model, s, log
        torch.set_num_threads(s["threads"])
        torch.use_deterministic_algorithms(True)
        torch.manual_seed(s["seed"])
        self.oracle, self.real = None, None
        d: OracleData | RealData
        if s["mode"] == "synthetic":
            from .data import OracleData

            d = OracleData(
                seed=s["seed"],
                vocab_size=s["vocab_size"],
                seq_len=s["seq_len"],
                emb_dim=s["oracle_emb_dim"],
                hidden_dim=s["oracle_hidden_dim"],
                n_train=s["n_train"],
                n_test=s["n_test"],
            )
            self.oracle = d.oracle
            from .oracle import oracle_info

            self.oracle_info = oracle_info(d.oracle, s["seed"], built=True)
            self.vocab = None
        else:
            from .realdata import RealData

            d = self.real = RealData(s["data"], seq_len=s["seq_len"])
            self.vocab = d.vocab
        self.data = d
        self.train, self.test = d.splits["train"], d.splits["test"]
        self.config = GenConfig(
            len(self.vocab) if self.vocab else s["vocab_size"], s["emb_dim"], s["hidden_dim"], s["seq_len"]
        )
        torch.manual_seed(s["seed"] + 2)
        self.model = model_class(model)(self.config, s, torch.Generator().manual_seed(s["seed"] + 3))
        if s["pretrained"]:
            from .oracle import load_model_file

            gen, _ = load_model_file(s["pretrained"], "generator")
            self.model.gen.load_state_dict(gen.state_dict(), strict=False)
        self._epoch_seed = 0
        self.model.epoch_batches = self.epoch_batches
        self.entries: dict[str, Any] = {}
        self.curve: list[dict[str, Any]] = []
        self.epoch = 0

    def epoch_batches(self) -> Iterator[torch.Tensor]:
        self._epoch_seed += 1
        return self.data.batches(
            "train", self.s["batch_size"], shuffle=True, seed=self.s["seed"] * 100003 + self._epoch_seed
        )

    def real_batches(self) -> Iterator[torch.Tensor]:
        while True:
            for x in self.epoch_batches():
                if len(x) == self.s["batch_size"] or len(self.train) < self.s["batch_size"]:
                    yield x

    # -- evaluation ----------------------------------------------------------------------------------
    def evaluate(self) -> dict[str, Any]:
        """Every metric of the mode with its hash (a result dict)."""
        from . import metrics as M

        s = self.s
        rng = torch.Generator().manual_seed(s["seed"] * 7919 + 1)  # the same draws at every epoch: a smoother curve
        samples = self.model.sample(s["eval_samples"], rng)
        gen = self.model.gen
        gen.eval()
        out = dict(M.nll_test_entry(M.mean_nll(gen, self.test), gen, self.test, self.vocab))
        rows = s["embsim_rows"] or None
        if self.oracle is not None:
            out.update(M.nll_oracle_entry(M.mean_nll(self.oracle, samples), self.oracle_info, len(samples)))
            ref, table = self.oracle.emb.weight.detach().numpy(), self.model.embedding().numpy()
            if ref.shape == table.shape:
                out.update(M.embsim_entry(M.embsim(ref, table, rows), ref, table, rows))
        else:
            from cotk_repro.metrics import get_metric

            assert self.real is not None, "mode 'real' sets self.real"
            text = self.real.decode(samples)
            refs = self.real.texts["test"]
            out.update(get_metric("bleu").compute(text, [refs] * len(text)))
            out.update(get_metric("self-bleu").compute(text))
            out.update(M.EmbSim(rows=rows, seed=s["seed"]).compute(text, [refs]))
        self._samples = samples
        return out

    def checkpoint(self) -> None:
        if self.epoch % self.s["eval_every"]:
            return
        from cotk_repro.core.results import HASH_SUFFIX, SIGNATURE_SUFFIX

        res = self.evaluate()
        point = {"epoch": self.epoch}
        for key, value in res.items():
            if key.endswith((HASH_SUFFIX, SIGNATURE_SUFFIX)):
                base, _, suffix = key.rpartition(" ")
                self.entries[f"{base}@epoch-{self.epoch} {suffix}"] = value
            else:
                self.entries[f"{key}@epoch-{self.epoch}"] = value
                point[key] = value
        self.curve.append(point)
        self.log(f"epoch {self.epoch}: " + ", ".join(f"{k} {v:.4f}" for k, v in point.items() if k != "epoch"))

    # -- the protocol ------------------------------------------------------------------------------
    def train_all(self) -> dict[str, Any]:
        s, m = self.s, self.model
        t0 = time.perf_counter()
        if m.pretrain:
            for _ in range(s["pre_gen_epochs"]):
                loss = m.mle_epoch(self.epoch_batches())
                self.epoch += 1
                self.log(f"pretrain generator epoch {self.epoch}: nll {loss:.4f}")
                self.checkpoint()
            if m.uses_discriminator:
                real = self.real_batches()
                for _ in range(s["pre_dis_epochs"]):
                    for _ in range(s["dis_steps"]):
                        m.critic_step(next(real))
        real = self.real_batches()
        for _ in range(s["adv_epochs"]):
            losses = m.adversarial_epoch(real)
            self.epoch += 1
            self.log(f"adversarial epoch {self.epoch}: " + ", ".join(f"{k} {v:.4f}" for k, v in losses.items()))
            self.checkpoint()
        final = self.evaluate()
        self.entries.update(final)
        self.seconds = time.perf_counter() - t0
        return final

    def save(self, out_dir: str | Path = ".") -> Path:
        """``result.json``, ``checkpoints/generator.pt`` and ``outputs/samples.txt`` under ``out_dir``."""
        from cotk_repro.core.results import save_result

        out = Path(out_dir)
        (out / "checkpoints").mkdir(parents=True, exist_ok=True)
        (out / "outputs").mkdir(parents=True, exist_ok=True)
        gen = self.model.gen
        torch.save(
            {
                "kind": "texygen-generator",
                "model": self.model_name,
                "config": gen.config.as_dict(),
                "state": {k: v for k, v in gen.state_dict().items() if k.split(".")[0] in ("emb", "lstm", "out")},
                "vocab": self.vocab,
            },
            out / "checkpoints" / "generator.pt",
        )
        text = (
            self.real.decode(self._samples)
            if self.real is not None
            else [" ".join(map(str, r)) for r in self._samples.tolist()]
        )
        (out / "outputs" / "samples.txt").write_text("\n".join(text) + "\n", encoding="utf-8")
        return save_result(self.entries, out / "result.json", data=self.data.hash_codes)


def run(
    model: str,
    preset: str = "tiny",
    out_dir: str | Path | None = ".",
    log: Callable[[str], None] = print,
    **overrides: Any,
) -> Run:
    """Train ``model`` with a preset (and overrides), evaluate, and write the result under ``out_dir``
    (None: write nothing). Every setting is checked before anything is trained or written."""
    s = settings_for(preset, overrides)
    r = Run(model, s, log)
    r.train_all()
    if out_dir is not None:
        r.save(out_dir)
    return r
