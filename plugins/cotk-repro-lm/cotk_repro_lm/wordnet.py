"""WordNet for the synonym augmentation: the core's one loader (:mod:`cotk_repro.data.wordnet`), which METEOR uses
too, so both read the same files the same way (the folder given, ``$COTK_REPRO_WORDNET``, NLTK's data path, then
Debian's ``/usr/share/wordnet``)."""

from __future__ import annotations

from cotk_repro.data.wordnet import (
    DEFAULT_ROOTS,
    LEXNAMES,
    NEEDED,
    WordNetMissing,
    find_root,
    load_wordnet,
    wordnet_version,
)

__all__ = ["DEFAULT_ROOTS", "LEXNAMES", "NEEDED", "WordNetMissing", "find_root", "load_wordnet", "wordnet_version"]
