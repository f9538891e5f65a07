"""The ``hf:NAME_OR_PATH`` tokenizer: any Hugging Face tokenizer for cotk-repro's loaders and metrics.

``NAME_OR_PATH`` is a ``tokenizer.json`` file, a folder holding one (or a slow tokenizer's files, read
with ``transformers``), or a hub name (works where the hub is reachable or the name is cached). Tokens
are the tokenizer's own pieces (``Ġthe``, ``##ing``), without special tokens; ``detokenize`` decodes them
back to text, so BLEU, which re-tokenizes text, stays comparable across tokenizers.

Identity: ``settings`` holds the SHA-256 of the tokenizer's files (never their path), so the data hashes
change exactly when the tokenizer does. A hub tokenizer is identified by its name and its serialized
fast tokenizer.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cotk_repro.data.errors import DataError
from cotk_repro.data.tokenizers import Tokenizer

from .fileshash import files_hash, tokenizer_files


class HFTokenizer(Tokenizer):
    """A Hugging Face tokenizer (``tokenizers`` or ``transformers``) as a cotk-repro tokenizer."""

    version = "1"

    def __init__(self, name_or_path: str) -> None:
        self.source = name_or_path
        self.name = f"hf:{name_or_path}"
        path = Path(name_or_path).expanduser()
        self._fast: Any = None  # a tokenizers.Tokenizer
        self._slow: Any = None  # a transformers tokenizer (None once _fast is set)
        if path.is_file():
            self._fast = _load_json(path)
            self._identity = {"kind": "files", "files": files_hash("tokenizer", [path], name="tokenizer.json")}
        elif path.is_dir():
            files = tokenizer_files(path)
            if not files:
                raise DataError(
                    f"{path} holds no tokenizer files (tokenizer.json, vocab.json + merges.txt, vocab.txt, ...)"
                )
            if (path / "tokenizer.json").is_file():
                self._fast = _load_json(path / "tokenizer.json")
            else:
                self._slow = _auto_tokenizer(str(path))
            self._identity = {"kind": "files", "files": files_hash("tokenizer", files)}
        elif "/" in name_or_path and name_or_path.startswith((".", "/", "~")):
            raise DataError(f"tokenizer path {name_or_path} does not exist")
        else:
            self._slow = _auto_tokenizer(name_or_path)
            backend = getattr(self._slow, "backend_tokenizer", None)
            serial = backend.to_str() if backend is not None else repr(sorted(self._slow.get_vocab().items()))
            self._identity = {
                "kind": "hub",
                "hub": name_or_path,
                "serialized": hashlib.sha256(serial.encode("utf-8")).hexdigest(),
            }
        if self._slow is not None and getattr(self._slow, "is_fast", False):
            self._fast, self._slow = self._slow.backend_tokenizer, None

    @property
    def settings(self) -> dict[str, Any]:
        return {"name": "hf", "version": self.version, **self._identity}

    def tokenize(self, text: str) -> list[str]:
        if self._fast is not None:
            return list(self._fast.encode(text, add_special_tokens=False).tokens)
        return list(self._slow.tokenize(text))

    def tokenize_many(self, texts: Sequence[str]) -> list[list[str]]:
        if self._fast is not None:
            return [list(e.tokens) for e in self._fast.encode_batch(list(texts), add_special_tokens=False)]
        return [self.tokenize(t) for t in texts]

    def detokenize(self, tokens: Sequence[str]) -> str:
        if self._fast is not None:
            unk = None
            ids = []
            for t in tokens:
                i = self._fast.token_to_id(t)
                if i is None:
                    unk = unk if unk is not None else _unk_id(self._fast)
                    if unk is None:
                        continue
                    i = unk
                ids.append(i)
            return self._fast.decode(ids, skip_special_tokens=False)
        return self._slow.convert_tokens_to_string(list(tokens))


def _load_json(path: Path):
    from tokenizers import Tokenizer as RustTokenizer

    try:
        return RustTokenizer.from_file(str(path))
    except Exception as exc:
        raise DataError(f"{path} is not a tokenizer.json the tokenizers library can read ({exc})") from None


def _auto_tokenizer(name: str):
    try:
        from transformers import AutoTokenizer
    except ImportError:  # pragma: no cover - a dependency of this plugin
        raise DataError("the hf: tokenizers need transformers: pip install transformers") from None
    try:
        return AutoTokenizer.from_pretrained(name)
    except (OSError, ValueError) as exc:
        raise DataError(
            f"cannot load the Hugging Face tokenizer {name!r}: not a local folder or file, and not "
            f"available from the hub or its cache ({str(exc).splitlines()[0]})"
        ) from None


def _unk_id(tok) -> int | None:
    model = tok.get_vocab()
    for name in ("<unk>", "[UNK]", "<|endoftext|>"):
        if name in model:
            return model[name]
    return None


def hf_factory(name_or_path: str, **options: Any) -> HFTokenizer:
    """The registered factory of ``hf:NAME_OR_PATH``."""
    if options:
        raise DataError(f"tokenizer hf:{name_or_path} takes no options, got: {', '.join(sorted(options))}")
    return HFTokenizer(name_or_path)
