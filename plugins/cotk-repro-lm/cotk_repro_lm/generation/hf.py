"""Generator ``hf``: a local ``transformers`` model (a folder saved with ``save_pretrained``, or ``hf:NAME``),
causal (``AutoModelForCausalLM``) or encoder-decoder (``AutoModelForSeq2SeqLM``, chosen by the config's
``is_encoder_decoder``).

A decoder-only model's prompts are padded on the LEFT (the pad token is the end-of-text token when the tokenizer
has none) with an attention mask, so every prompt's last token sits next to its first new token and padding is
never attended to. In float32 on a CPU greedy outputs then do not depend on the batch size (the test holds batch 1
and batch 8 equal token for token), and the batch size is not part of the system. Everywhere else it is
(``BATCH_INVARIANT``): in bfloat16 or float16 a padded batch sums in another order and a near-tie of two logits
flips (measured: 1 of 64 prompts differs between batch 1 and batch 8), and a GPU's kernels change with the batch
shape. Sampling is seeded per batch from ``seed`` and the batch's prompts, so a rerun (and a resumed run, batch by
batch) draws the same outputs; with ``do_sample`` the batch size is part of the settings too, since it changes
which prompts share a random stream (and with ``repetition_penalty``, which transformers applies to the pad tokens
before a prompt).

The system's identity (``settings``) is what decides the outputs: ``weights_sha256`` (the weight files, the fields
of config.json and of generation_config.json but for the bookkeeping ones, ``CONFIG_BOOKKEEPING`` and
``GENERATION_IGNORED``, which record who wrote the file or which this generator overrides), ``tokenizer_sha256``
(tokenizer files and chat template) and every decoding setting; a folder is named by its basename, never its path.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from cotk_repro.metrics.base import MetricError

from ..encoders import model_weight_files, quiet_hf, resolve_model
from ..fileshash import files_hash, json_fields_hash, tokenizer_files
from . import (
    GenerationError,
    check_bool,
    check_float,
    check_int,
    check_prompt,
    check_stop,
    cut_at_stop,
    excerpt,
    reject_unknown,
)

NAME = "hf"
#: files beside the tokenizer's that change what it renders: the chat template (transformers >= 4.43 writes it
#: to its own file)
CHAT_TEMPLATE_FILES = ("chat_template.jinja", "chat_template.json")
DTYPES = ("float32", "float16", "bfloat16")
CONTEXT_KEYS = ("n_positions", "max_position_embeddings", "n_ctx")
#: the configurations in which greedy outputs are tested not to depend on the batch size: (dtype, device type)
BATCH_INVARIANT = frozenset({("float32", "cpu")})
#: fields of config.json and generation_config.json (at any depth) that say who wrote the file, not what the model
#: computes: the library's version, the folder it was loaded from, whether the generation config was derived from
#: the model's, and the dtype the weights were saved in (the weights' own bytes say that; this generator loads in its
#: ``dtype`` setting whatever the file says)
CONFIG_BOOKKEEPING = (
    "transformers_version",
    "_name_or_path",
    "_commit_hash",
    "_from_model_config",
    "torch_dtype",
    "dtype",
)
#: generation_config.json's sampling defaults, which this generator never uses (its own settings replace them)
GENERATION_IGNORED = ("temperature", "top_p", "top_k", "min_p", "typical_p")


def _context_size(config: Any) -> int | None:
    for key in CONTEXT_KEYS:
        value = getattr(config, key, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


class HFGenerator:
    """One output per prompt from a local ``transformers`` model (see the module's docstring)."""

    name = NAME
    version = "1"
    pinned = True
    accepts_prompts = True

    def __init__(
        self,
        model: Any = None,
        *,
        chat: bool = False,
        max_new_tokens: int = 64,
        do_sample: bool = False,
        temperature: float = 1.0,
        top_p: float = 1.0,
        top_k: int = 0,
        num_beams: int = 1,
        repetition_penalty: float = 1.0,
        stop: Any = None,
        seed: int = 0,
        dtype: str = "float32",
        batch_size: int = 8,
        device: str = "cpu",
        **unknown: Any,
    ):
        reject_unknown(NAME, unknown, [*SETTINGS])
        if model is None:
            raise GenerationError("generator hf needs a model: a local model folder or hf:NAME (-g hf.model=...)")
        self.chat = check_bool(NAME, "chat", chat)
        self.max_new_tokens = check_int(NAME, "max_new_tokens", max_new_tokens, 1)
        self.do_sample = check_bool(NAME, "do_sample", do_sample)
        self.temperature = check_float(NAME, "temperature", temperature, 0.0)
        if self.do_sample and self.temperature == 0.0:
            raise GenerationError("generator hf: do_sample=true needs a temperature above 0 (greedy: do_sample=false)")
        self.top_p = check_float(NAME, "top_p", top_p, 0.0, 1.0)
        self.top_k = check_int(NAME, "top_k", top_k, 0)
        self.num_beams = check_int(NAME, "num_beams", num_beams, 1)
        self.repetition_penalty = check_float(NAME, "repetition_penalty", repetition_penalty, 0.0)
        if self.repetition_penalty == 0.0:
            raise GenerationError("generator hf: setting repetition_penalty must be above 0 (1.0 = none)")
        self.stop = check_stop(NAME, stop)
        self.seed = check_int(NAME, "seed", seed, 0)
        if dtype not in DTYPES:
            raise GenerationError(f"generator hf: setting dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
        self.dtype = dtype
        self.batch_size = check_int(NAME, "batch_size", batch_size, 1)
        self.device = self._device(device)

        try:
            folder = resolve_model(model, "generator hf: model")
        except MetricError as exc:
            raise GenerationError(str(exc)) from None
        self.folder = folder.path
        chat_files = [folder.path / n for n in CHAT_TEMPLATE_FILES if (folder.path / n).is_file()]
        tokenizer_sha256 = files_hash("tokenizer", [*tokenizer_files(folder.path), *chat_files])
        label: dict[str, Any] = {"model": folder.label}
        if folder.label.startswith("hf:"):
            label["revision"] = folder.path.name  # the hub snapshot's commit
        self.settings: dict[str, Any] = {
            **label,
            "weights_sha256": self.weights_identity(folder.path),
            "tokenizer_sha256": tokenizer_sha256,
            "chat": self.chat,
            "max_new_tokens": self.max_new_tokens,
            "do_sample": self.do_sample,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "top_k": self.top_k,
            "num_beams": self.num_beams,
            "repetition_penalty": self.repetition_penalty,
            "stop": self.stop,
            "seed": self.seed,
            "dtype": self.dtype,
            "device": self.device.type,
        }
        if (
            self.do_sample
            or (self.repetition_penalty != 1.0 and not self.seq2seq_config(folder.config))
            or (self.dtype, self.device.type) not in BATCH_INVARIANT
        ):
            # sampling: which prompts share a random stream; transformers' repetition penalty also penalizes the
            # pad tokens a batch puts before a prompt; half precision and GPU kernels change with the batch's shape.
            # Otherwise (greedy or beams, float32 on a CPU) the batch size changes nothing.
            self.settings["batch_size"] = self.batch_size
        self._load()

    # ----- loading -----

    @staticmethod
    def weights_identity(folder: Any) -> str:
        """What of a model folder decides the outputs (the module's docstring): the weight files' SHA-256, and
        config.json and generation_config.json less their bookkeeping fields."""
        from cotk_repro.core.canonical import hash_object

        generation = folder / "generation_config.json"
        try:
            return hash_object(
                {
                    "weights": files_hash("weights", model_weight_files(folder)),
                    "config": json_fields_hash(folder / "config.json", CONFIG_BOOKKEEPING),
                    "generation_config": json_fields_hash(generation, CONFIG_BOOKKEEPING + GENERATION_IGNORED)
                    if generation.is_file()
                    else None,
                }
            )
        except ValueError as exc:
            raise GenerationError(f"cannot read the model folder {folder.name} for generator hf ({exc})") from None

    @staticmethod
    def seq2seq_config(config: dict) -> bool:
        """Whether a model folder's config.json is an encoder-decoder's (its decoder inputs are never padded)."""
        return bool(config.get("is_encoder_decoder", False))

    def _device(self, device: Any) -> Any:
        import torch

        if device == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        if isinstance(device, str) and (device == "cpu" or device.startswith("cuda")):
            try:
                dev = torch.device(device)
            except (RuntimeError, TypeError):
                dev = None
            if dev is not None:
                if dev.type == "cuda" and not torch.cuda.is_available():
                    raise GenerationError("generator hf: device=cuda but torch sees no CUDA device here")
                return dev
        raise GenerationError(f"generator hf: setting device must be auto, cpu or cuda[:N], not {device!r}")

    def _load(self) -> None:
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

        try:
            with quiet_hf():
                config = AutoConfig.from_pretrained(self.folder)
                self.seq2seq = bool(getattr(config, "is_encoder_decoder", False))
                cls = AutoModelForSeq2SeqLM if self.seq2seq else AutoModelForCausalLM
                model = cls.from_pretrained(self.folder, dtype=getattr(torch, self.dtype))
                tokenizer = AutoTokenizer.from_pretrained(self.folder)
        except (OSError, ValueError, KeyError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise GenerationError(
                f"cannot load the model {self.settings['model']} for generator hf ({first})"
            ) from None
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        if tokenizer.pad_token_id is None:
            if tokenizer.eos_token_id is None:
                raise GenerationError(
                    f"the tokenizer of {self.settings['model']} has neither a pad nor an end-of-text token to pad with"
                )
            tokenizer.pad_token = tokenizer.eos_token
        # decoder-only: pad on the left, so every prompt ends right where its output begins
        tokenizer.padding_side = "right" if self.seq2seq else "left"
        self.context = _context_size(model.config)
        self._stopping = None
        if self.stop:
            from transformers import StoppingCriteriaList, StopStringCriteria

            self._stopping = StoppingCriteriaList([StopStringCriteria(tokenizer, self.stop)])

    # ----- prompts -----

    def _encode(self, index: int, prompt: Any) -> list[int]:
        prompt = check_prompt(NAME, index, prompt)
        if self.chat or not isinstance(prompt, str):
            if not getattr(self.tokenizer, "chat_template", None):
                raise GenerationError(
                    f"the tokenizer of {self.settings['model']} has no chat template; use chat=false with plain prompts"
                )
            messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
            try:
                text = str(self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))
            except Exception as exc:  # a stranger's Jinja template: its own error, in one sentence
                raise GenerationError(
                    f"the chat template of {self.settings['model']} failed on prompt {index + 1}: "
                    f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no detail'}"
                ) from None
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        else:
            text = prompt
            ids = self.tokenizer(text)["input_ids"]
        if not ids:  # an empty prompt: generation starts from the start (or end) of text token
            start = self.tokenizer.bos_token_id
            ids = [start if start is not None else self.tokenizer.pad_token_id]
        if self.context is not None:
            need = len(ids) if self.seq2seq else len(ids) + self.max_new_tokens
            if need > self.context:
                what = "" if self.seq2seq else f" plus max_new_tokens={self.max_new_tokens}"
                raise GenerationError(
                    f"prompt {index + 1} ({excerpt(text)!r}) is {len(ids)} tokens long, which{what} exceeds "
                    f"the model's context of {self.context} tokens"
                )
        return ids

    # ----- generation -----

    def generation_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``model.generate`` for these settings."""
        from transformers import GenerationConfig

        base = self.model.generation_config.to_dict()
        for key in ("temperature", "top_p", "top_k", "min_p", "typical_p"):
            base.pop(key, None)  # the model's own sampling defaults never leak into greedy decoding
        config = GenerationConfig(**base)
        config.update(
            max_new_tokens=self.max_new_tokens,
            do_sample=self.do_sample,
            num_beams=self.num_beams,
            repetition_penalty=self.repetition_penalty,
            pad_token_id=self.tokenizer.pad_token_id,
        )
        if self.do_sample:
            config.update(temperature=self.temperature, top_p=self.top_p, top_k=self.top_k)
        kwargs: dict[str, Any] = {"generation_config": config}
        if self._stopping is not None:
            kwargs["stopping_criteria"] = self._stopping
        return kwargs

    def _batch_seed(self, ids: list[list[int]]) -> int:
        digest = hashlib.sha256(json.dumps([self.seed, ids]).encode()).digest()
        return int.from_bytes(digest[:8], "big") & ((1 << 63) - 1)

    def _run_batch(self, ids: list[list[int]], kwargs: dict[str, Any]) -> list[list[int]]:
        """The new tokens of each prompt of one batch, up to (not including) its end of text."""
        import torch

        pad = self.tokenizer.pad_token_id
        width = max(len(x) for x in ids)
        rows, masks = [], []
        for x in ids:
            fill = [pad] * (width - len(x))
            ones, zeros = [1] * len(x), [0] * (width - len(x))
            rows.append(x + fill if self.seq2seq else fill + x)
            masks.append(ones + zeros if self.seq2seq else zeros + ones)
        input_ids = torch.tensor(rows, dtype=torch.long, device=self.device)
        attention_mask = torch.tensor(masks, dtype=torch.long, device=self.device)
        torch.manual_seed(self._batch_seed(ids))
        with torch.inference_mode():
            out = self.model.generate(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        new = (out[:, 1:] if self.seq2seq else out[:, width:]).tolist()  # seq2seq: after the decoder's start token
        ends = {pad, *self._eos_ids()}
        kept = []
        for row in new:
            cut = next((i for i, t in enumerate(row) if t in ends), len(row))
            kept.append(row[:cut])
        return kept

    def _eos_ids(self) -> list[int]:
        eos = self.model.generation_config.eos_token_id
        if eos is None:
            eos = self.tokenizer.eos_token_id
        return [] if eos is None else list(eos) if isinstance(eos, (list, tuple)) else [eos]

    def generate_ids(self, prompts: list[Any]) -> list[list[int]]:
        """The generated token ids of each prompt (up to its end of text), in the prompts' order."""
        ids = [self._encode(i, p) for i, p in enumerate(prompts)]  # every prompt checked before any work
        kwargs = self.generation_kwargs()
        out: list[list[int]] = []
        for start in range(0, len(ids), self.batch_size):
            out.extend(self._run_batch(ids[start : start + self.batch_size], kwargs))
        return out

    def generate(self, prompts: list[Any]) -> list[str]:
        """One output per prompt (a string, or chat messages), in the prompts' order, cut at the first stop string."""
        texts = self.tokenizer.batch_decode(self.generate_ids(prompts), skip_special_tokens=True)
        return [cut_at_stop(t, self.stop) for t in texts]


SETTINGS = (
    "model",
    "chat",
    "max_new_tokens",
    "do_sample",
    "temperature",
    "top_p",
    "top_k",
    "num_beams",
    "repetition_penalty",
    "stop",
    "seed",
    "dtype",
    "batch_size",
    "device",
)
