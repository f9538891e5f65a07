"""Dataloader hash codes (docs/spec.md section 5, the paper's Table 2), order-independent by construction.

Definitions (all through :mod:`cotk_repro.core.canonical`):

* A *sample* is a list of utterances (language generation: one sentence; single-turn
  dialog: post and response; multi-turn dialog: the turns of a session).
* Its *raw digest* is SHA-256 of ``canonical_json([utterance, ...])`` (the raw strings);
  its *data digest* is SHA-256 of ``canonical_json([[token, ...], ...])`` (the tokens).
* A split's raw (data) hash is a :class:`~cotk_repro.core.canonical.StreamHasher` over the
  number of samples and the **sorted** sample digests (a sorted multiset: sample order
  never matters, duplicates count).
* ``raw`` / ``data`` = ``hash_object`` of ``{"splits": {split: split hash}}`` with a label;
  ``vocab`` = ``hash_object`` of F and R in id order; ``setting`` = ``hash_object`` of
  the settings; ``general`` = ``hash_object`` of the four.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from json.encoder import encode_basestring  # C-accelerated; the string part of canonical JSON
from typing import Any

import numpy as np

from ..core.canonical import StreamHasher, hash_object, spaced_token_list_items, string_items, token_list_items

HASH_VERSION = 1
_sha256 = hashlib.sha256


def raw_digest_one(text: str) -> bytes:
    """Digest of a one-utterance sample: SHA-256 of ``canonical_json([text])``."""
    return _sha256(("[" + encode_basestring(text) + "]").encode("utf-8")).digest()


def raw_digests_one(texts: Sequence[str]) -> bytes:
    """Concatenated :func:`raw_digest_one` of many texts (their canonical JSON built in bulk)."""
    return b"".join([_sha256(p).digest() for p in string_items(texts)])


def raw_digest(utterances: Sequence[str]) -> bytes:
    """SHA-256 of ``canonical_json(list(utterances))``."""
    return _sha256(("[" + ",".join(map(encode_basestring, utterances)) + "]").encode("utf-8")).digest()


def data_digests_one(token_lists: Sequence[Sequence[str]], spaced: bytes | None = None) -> bytes:
    """Concatenated data digests of one-utterance samples: SHA-256 of ``canonical_json([tokens])``. ``spaced``: the
    same tokens in spaced form (a tokenizer's ``tokenize_spaced``), the quicker way to their canonical JSON."""
    items = spaced_token_list_items(spaced) if spaced is not None else None
    if items is None or len(items) != len(token_lists):  # pragma: no cover - defensive: the lines are the texts
        items = token_list_items(token_lists)
    return b"".join([_sha256(p).digest() for p in items])


def data_digest(token_lists: Sequence[Sequence[str]]) -> bytes:
    """SHA-256 of ``canonical_json([list(tokens) for tokens in token_lists])``."""
    eb = encode_basestring
    body = ",".join("[" + ",".join(map(eb, t)) + "]" for t in token_lists)
    return _sha256(("[" + body + "]").encode("utf-8")).digest()


def _sorted_array(blobs: bytes | Sequence[bytes]) -> np.ndarray:
    """The 32-byte digests of ``blobs`` (one blob or a list of them) in one new array, sorted in place bytewise:
    numpy's sort of fixed-width byte strings compares every byte as unsigned, in order (all 32, trailing zero
    bytes included: the items have one width), several times faster than a lexsort of four 64-bit words."""
    parts = [blobs] if isinstance(blobs, (bytes, bytearray, memoryview)) else list(blobs)
    if any(len(p) % 32 for p in parts):
        raise ValueError("digest blob length is not a multiple of 32")
    arr = np.concatenate([np.frombuffer(p, dtype="S32") for p in parts]) if parts else np.zeros(0, "S32")
    arr.sort()
    return arr


def sorted_digests(blobs: bytes | Sequence[bytes]) -> bytes:
    """Sort 32-byte digests bytewise (``blobs``: one blob or a list of blobs)."""
    return _sorted_array(blobs).tobytes()


def multiset_hash(label: str, blobs: bytes | Sequence[bytes]) -> str:
    """Order-independent hash of a multiset of 32-byte digests (``blobs``: one blob or a list of blobs, never
    joined: the sorted copy is the only one)."""
    arr = _sorted_array(blobs)
    h = StreamHasher(f"cotk-repro/data/{label}/v{HASH_VERSION}")
    h.update(len(arr))
    h.update_bytes(arr.data.cast("B"))  # arr.data: the memoryview of the (contiguous) array
    return h.hexdigest()


def combine_splits(kind: str, split_hashes: Mapping[str, str]) -> str:
    """Hash the per-split hashes of one kind (`kind`) into a single dataset-level hash."""
    return hash_object({"hash": kind, "version": HASH_VERSION, "splits": dict(split_hashes)})


def vocab_hash(frequent: Sequence[str], rare: Sequence[str]) -> str:
    """Hash the vocabulary: its frequent and rare word lists, in order."""
    return hash_object({"hash": "vocab", "version": HASH_VERSION, "frequent": list(frequent), "rare": list(rare)})


def setting_hash(settings: Mapping[str, Any]) -> str:
    """Hash the dataloader settings mapping."""
    return hash_object({"hash": "setting", "version": HASH_VERSION, "settings": dict(settings)})


def general_hash(raw: str, data: str, vocab: str, setting: str) -> str:
    """Combine the raw, data, vocab and setting hashes into the dataset's general hash."""
    return hash_object(
        {"hash": "general", "version": HASH_VERSION, "raw": raw, "data": data, "vocab": vocab, "setting": setting}
    )


def hash_codes(
    raw: Mapping[str, str],
    data: Mapping[str, str],
    frequent: Sequence[str],
    rare: Sequence[str],
    settings: Mapping[str, Any],
) -> dict[str, str]:
    """The five hash codes from per-split raw/data hashes, the vocabulary and the settings."""
    codes = {
        "raw": combine_splits("raw", raw),
        "data": combine_splits("data", data),
        "vocab": vocab_hash(frequent, rare),
        "setting": setting_hash(settings),
    }
    codes["general"] = general_hash(codes["raw"], codes["data"], codes["vocab"], codes["setting"])
    return codes


def digest_blob(digests: Iterable[bytes]) -> bytes:
    """Concatenate per-item digests into one bytes blob, in order."""
    return b"".join(digests)
