"""One declaration per result: the settings its comparability hash covers and its readable signature, from one list.

A metric declares, for each value it reports, the ordered :class:`Setting` list that makes the value what it is;
:class:`Declaration` derives both the hash's settings mapping and the signature from it (as sacrebleu derives its
``Signature`` from one args dict), so a setting cannot be hashed and missing from the signature, or the reverse,
unless the declaration says so with one of the documented reasons in :data:`EXCEPTIONS`::

    decl = Declaration("nist", self.version, [
        Setting("ngram", self.ngram, "n"),
        Setting("tokenizer", self.tokenizer.spec, "tok", shown=self.tokenizer.name),
        Setting.signature_only("refs", max_refs, why=REFERENCES_HASHED),
    ])
    return decl.entry("nist", value, lambda settings: reference_set_hash("nist", settings, ref_toks))

The hash settings are ``{setting.key: setting.value, ..., "version": version}``; the signature is
``name|abbrev:shown|...|v:version``, a setting whose value equals its declared ``elide`` default left out of
the signature (never out of the hash). Documented in docs/metrics.md, "Hash and signature: one declaration".
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..core.results import result_entry
from .base import signature

# -- the reasons a setting may be on one side only (docs/metrics.md lists them; tests/test_metric_declarations.py
# refuses any other)
#: a count of references or hypotheses in the signature: the hash covers the texts themselves
COUNTED_INPUTS: Final = "the hash covers the inputs themselves; the signature counts them"
#: a fixed property of this metric version, hashed; the signature's ``v:`` stands for it
FIXED_BY_VERSION: Final = "a constant of the metric's version: the signature's v: stands for it"
#: the metric's name, hashed; the signature begins with it
NAMED_FIRST: Final = "the signature begins with the name"
#: a part of a setting that is hashed whole under another key (an oracle's seed inside its description)
PART_OF_HASHED: Final = "shown apart in the signature; hashed as part of another setting"
#: a setting the published signature has never shown (kept hash-only so that no published signature changes)
HASH_ONLY_AS_PUBLISHED: Final = "hashed; left out of the signature as published since version 1"
#: hashed under its own key, shown within another setting's field (gleu's ``n:1-4`` holds min_len and max_len)
SHOWN_WITH_ANOTHER: Final = "shown within another setting's field of the signature"
#: the size of the scored system's output: the hash covers only what every system scored on it shares
SYSTEM_OUTPUT_SIZE: Final = "the size of the system's output, shown; the hash covers what systems share"
#: the digest of the evaluated model's own weights or table: shown, never hashed (a hash over it would put every
#: model in a group of its own; texygen's nll-test and embsim)
EVALUATED_MODEL_SIGNED: Final = "the evaluated model's digest: shown, never hashed, so that models compare"
#: a readable name of something hashed by its content (a model folder's name: the same files elsewhere hash alike)
READABLE_NAME: Final = "a readable name of something hashed by its content"
#: a digest of the references: the hash covers them, as every metric's hash covers its references
REFERENCES_DIGEST: Final = "a digest of the references, hashed as every reference set is"
#: a label the signature shows for readers, derived from hashed settings
DERIVED_LABEL: Final = "a readable label derived from hashed settings"
#: a value the computation produced (coherence's and fluency's lower bound from a reference set): its last bits
#: move with the CPU's kernels, so the hash covers what produced it (the set's digest) and never the value
COMPUTED_VALUE: Final = "a value the computation produced: shown, never hashed; the hash covers its inputs"

EXCEPTIONS: Final = (
    COUNTED_INPUTS,
    FIXED_BY_VERSION,
    NAMED_FIRST,
    PART_OF_HASHED,
    HASH_ONLY_AS_PUBLISHED,
    SHOWN_WITH_ANOTHER,
    SYSTEM_OUTPUT_SIZE,
    EVALUATED_MODEL_SIGNED,
    READABLE_NAME,
    REFERENCES_DIGEST,
    DERIVED_LABEL,
    COMPUTED_VALUE,
)


class _Unset(enum.Enum):
    UNSET = "unset"


UNSET: Final = _Unset.UNSET


@dataclass(frozen=True)
class Setting:
    """One setting of a result: hashed as ``key: value``, shown in the signature as ``abbrev:shown``.

    ``shown``: the signature's spelling when it differs from the hashed value (``m3`` for ``method3``).
    ``elide``: a default the signature leaves out (the hash keeps it, unless ``hash_elide``). ``hash_elide``: a
    default the hash leaves out, as published (perplexity's CoTK rules: the fair defaults hash as before the
    rules existed). ``key`` or ``abbrev`` None: the setting is on one side only, and ``why`` (one of
    :data:`EXCEPTIONS`) says why.
    """

    key: str | None
    value: Any
    abbrev: str | None
    shown: Any = UNSET
    elide: Any = UNSET
    why: str | None = None
    hash_elide: Any = UNSET

    def __post_init__(self) -> None:
        if self.key is None and self.abbrev is None:
            raise ValueError("a setting needs a hash key, a signature abbreviation or both")
        if (self.key is None or self.abbrev is None) and self.why not in EXCEPTIONS:
            raise ValueError(
                f"setting {self.key or self.abbrev!r} is on one side only: give why= one of "
                f"declaration.EXCEPTIONS, not {self.why!r}"
            )

    @classmethod
    def hash_only(cls, key: str, value: Any, *, why: str) -> Setting:
        """A setting the hash covers and the signature does not show (``why``: one of :data:`EXCEPTIONS`)."""
        return cls(key, value, None, why=why)

    @classmethod
    def signature_only(cls, abbrev: str, shown: Any, *, why: str) -> Setting:
        """A field the signature shows and the hash does not cover as a setting (``why``: :data:`EXCEPTIONS`)."""
        return cls(None, shown, abbrev, why=why)

    @property
    def signed(self) -> bool:
        """Whether the signature shows this setting for its value."""
        return self.abbrev is not None and not (self.elide is not UNSET and self.value == self.elide)

    @property
    def hashes(self) -> bool:
        """Whether the hash covers this setting for its value."""
        return self.key is not None and not (self.hash_elide is not UNSET and self.value == self.hash_elide)

    @property
    def shown_value(self) -> Any:
        """The value as the signature spells it."""
        return self.value if self.shown is UNSET else self.shown


class Declaration:
    """The ordered settings of one result, under the signature's ``name`` and the metric ``version``."""

    def __init__(self, name: str, version: str, settings: Iterable[Setting]) -> None:
        self.name = name
        self.version = str(version)
        self.settings: tuple[Setting, ...] = tuple(settings)
        keys = [s.key for s in self.settings if s.key is not None] + ["version"]
        abbrevs = [s.abbrev for s in self.settings if s.abbrev is not None] + ["v"]
        for seen in (keys, abbrevs):
            twice = sorted({k for k in seen if seen.count(k) > 1})
            if twice:
                raise ValueError(f"declaration of {name!r} names {', '.join(twice)} twice")

    def hashed(self) -> dict[str, Any]:
        """The settings mapping the comparability hash covers (with the version)."""
        out = {s.key: s.value for s in self.settings if s.hashes and s.key}
        out["version"] = self.version
        return out

    def signature(self) -> str:
        """The readable signature: ``name|abbrev:shown|...|v:version``."""
        return signature(
            self.name, {s.abbrev: s.shown_value for s in self.settings if s.signed and s.abbrev}, self.version
        )

    def entry(self, key: str, value: float, hasher: Callable[[dict[str, Any]], str]) -> dict[str, Any]:
        """The result entry of ``key``: its value, ``hasher(self.hashed())`` and :meth:`signature`."""
        return result_entry(key, value, hasher(self.hashed()), self.signature())

    def __repr__(self) -> str:
        return f"<declaration {self.signature()}>"


def with_settings(declaration: Declaration, extra: Sequence[Setting], *, name: str | None = None) -> Declaration:
    """``declaration`` with ``extra`` settings appended (and another signature name)."""
    return Declaration(name or declaration.name, declaration.version, (*declaration.settings, *extra))
