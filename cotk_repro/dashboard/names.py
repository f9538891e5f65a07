"""Names are identifiers, not free text: metric, task, dataset, project and user names.

A name is refused (one sentence) when it

* is not in Unicode NFKC form (full-width letters, ligatures, compatibility forms: write the plain form);
* holds a control, format or line/paragraph separator character (categories Cc, Cf, Zl, Zp: ``bleu\\n``,
  the zero-width space in ``bleu\\u200b``, the right-to-left override in ``\\u202eueLb``);
* differs only by case from a name registered already of its kind (``BLEU`` beside ``bleu``), or is
  confusable with one (the same *skeleton*: ``bl\\u0435u`` with a Cyrillic e beside ``bleu``).

The skeleton follows Unicode TS #39 with the confusables table of the maintained
``confusable_homoglyphs`` library: every character is replaced by one representative of its class of
look-alikes (an ASCII one where the class has one, a multi-character prototype first: ``m`` and ``rn``).
:func:`keys` folds case too: two names of one kind sharing a key are one name.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

from ..errors import CotkError

REFUSED_CATEGORIES = ("Cc", "Cf", "Zl", "Zp")


class NameError_(CotkError):
    """A name that cannot be an identifier (HTTP 422 / exit 2)."""


@lru_cache(maxsize=1)
def _prototypes() -> dict[str, str]:
    """Character -> the representative of its class of confusables (characters without look-alikes absent)."""
    from confusable_homoglyphs import confusables  # type: ignore[import-untyped]

    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def plain(token: str) -> str:  # the table wraps right-to-left characters in direction marks
        return token.replace("\u200e", "").replace("\u200f", "")

    for char, entries in confusables.confusables_data.items():
        char = plain(char)
        for entry in entries:
            other = plain(entry["c"])
            if char and other:
                a, b = find(char), find(other)
                if a != b:
                    parent[a] = b
    classes: dict[str, list[str]] = {}
    for token in list(parent):
        classes.setdefault(find(token), []).append(token)
    out: dict[str, str] = {}
    for members in classes.values():
        # the prototype: a sequence where the class has one (``m`` is ``rn``), else an ASCII character
        rep = min(members, key=lambda t: (not t.isascii(), -len(t), t))
        for token in members:
            if len(token) == 1 and token != rep:
                out[token] = rep
    return out


def skeleton(text: str) -> str:
    """The confusables skeleton of ``text`` (UTS #39: NFD, each character to its prototype, NFD)."""
    protos = _prototypes()
    once = "".join(protos.get(ch, ch) for ch in unicodedata.normalize("NFD", text))
    return unicodedata.normalize("NFD", "".join(protos.get(ch, ch) for ch in once))


@lru_cache(maxsize=65536)
def keys(name: str) -> frozenset[str]:
    """What makes two names one: names sharing a key are one name. Two keys, because the confusables table
    is not closed under case: the skeleton case-folded and skeletonised again (``bIeu``, ``BLEU``,
    ``bl\u0435u`` and ``bleu`` share it), and the skeleton of the case-folded name (``COCO`` and ``coco``)."""
    plain = unicodedata.normalize("NFKC", name)
    return frozenset((skeleton(skeleton(plain).casefold()), skeleton(plain.casefold())))


def check_form(name: str, what: str) -> str:
    """``name`` when it is NFKC and holds no control/format/separator character; else :class:`NameError_`."""
    if unicodedata.normalize("NFKC", name) != name:
        raise NameError_(
            f"the {what} {name[:60]!r} is not in Unicode NFKC form: write it as "
            f"{unicodedata.normalize('NFKC', name)[:60]!r}"
        )
    for ch in name:
        if unicodedata.category(ch) in REFUSED_CATEGORIES:
            raise NameError_(
                f"the {what} {name[:60]!r} holds the invisible or control character "
                f"U+{ord(ch):04X} ({unicodedata.name(ch, 'unnamed')}): names are identifiers"
            )
    return name


def check_against(name: str, what: str, registered: str | None) -> None:
    """Refuse ``name`` when ``registered`` (the name stored under its :func:`key`) is another spelling."""
    if registered is None or registered == name:
        return
    how = "differs only by case from" if registered.casefold() == name.casefold() else "looks like"
    raise NameError_(f"the {what} {name[:60]!r} {how} {registered[:60]!r}, registered already: use that name")


# -- the names a dashboard holds ---------------------------------------------------------------------------------
def key_digest(k: str) -> str:
    """The stored form of a key (``names.key``): its hex SHA-256, a fixed width any index takes."""
    import hashlib

    return hashlib.sha256(k.encode("utf-8", "surrogatepass")).hexdigest()


@lru_cache(maxsize=65536)
def digests(name: str) -> tuple[str, ...]:
    """The stored keys of ``name`` (:func:`key_digest` of each of :func:`keys`)."""
    return tuple(sorted(key_digest(k) for k in keys(name)))


def rows_for(kind: str, name: str) -> list[dict[str, str]]:
    """The ``names`` rows registering ``name`` as a ``kind``: one per key."""
    return [{"kind": kind, "key": h, "name": name} for h in digests(name)]
