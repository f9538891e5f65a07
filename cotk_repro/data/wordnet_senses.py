"""WordNet's ``index.sense`` (senseidx(5WN)) built from the data, index and ``cntlist.rev`` files, for a WordNet
folder that lacks it (Debian's ``wordnet-base`` without ``wordnet-sense-index``).

One line per sense, sorted by sense key: ``sense_key synset_offset sense_number tag_cnt``, where

* ``sense_key`` is ``lemma%ss_type:lex_filenum:lex_id:head_word:head_id``: the word as in the data file, lowercased,
  its adjective marker (``(a)``, ``(p)``, ``(ip)``) removed; ``ss_type`` 1-5 (noun, verb, adjective, adverb,
  adjective satellite); the lexicographer file and the word's ``lex_id`` as two decimal digits; for a satellite, the
  first word of its head synset (the target of its ``&`` pointer) and that word's ``lex_id``, empty otherwise; a
  word twice in one synset (``Earth 0 earth 1``) is one sense, the first;
* ``sense_number`` is the synset's place (from 1) in the word's entry of ``index.<pos>`` (satellites: ``index.adj``);
* ``tag_cnt`` is the count ``cntlist.rev`` gives the sense key (whose head word keeps its marker there,
  ``front(a)``), 0 where it gives none.

Tested byte for byte against Debian's ``wordnet-sense-index``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_PARTS = (("noun", "n"), ("verb", "v"), ("adj", "a"), ("adv", "r"))
_SS_TYPE = {"n": 1, "v": 2, "a": 3, "r": 4, "s": 5}
_MARKER = re.compile(r"\([a-z]+\)$")
_HEAD_MARKER = re.compile(r"\([a-z]+\)(?=:\d\d$)")


def _lines(path: Path):
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            if not line.startswith("  "):  # the licence header's lines start with two spaces
                yield line


def _synsets(path: Path):
    """``(offset, lex_filenum, ss_type, [(word, lex_id)], [(symbol, offset, pos)])`` of each synset in a data file."""
    for line in _lines(path):
        fields = line.split(" | ", 1)[0].split()
        offset, lex_filenum, ss_type, w_cnt = fields[0], int(fields[1]), fields[2], int(fields[3], 16)
        words = [(fields[4 + 2 * i], int(fields[5 + 2 * i], 16)) for i in range(w_cnt)]
        at = 4 + 2 * w_cnt
        p_cnt = int(fields[at])
        pointers = [(fields[at + 1 + 4 * i], fields[at + 2 + 4 * i], fields[at + 3 + 4 * i]) for i in range(p_cnt)]
        yield offset, lex_filenum, ss_type, words, pointers


def _lemma(word: str) -> str:
    return _MARKER.sub("", word).lower()


def build_sense_index(root: str | os.PathLike) -> bytes:
    """The contents of ``index.sense`` for the WordNet files in ``root`` (see the module's docstring)."""
    root = Path(root)
    senses: dict[tuple[str, str], list[str]] = {}
    for part, pos in _PARTS:
        for line in _lines(root / f"index.{part}"):
            fields = line.split()
            lemma, synset_cnt = fields[0], int(fields[2])
            senses[(lemma, pos)] = fields[-synset_cnt:]
    counts: dict[str, str] = {}
    cntlist = root / "cntlist.rev"
    if cntlist.is_file():
        for line in _lines(cntlist):
            key, _, count = line.split()
            counts[key] = count
        for key in list(counts):  # the head word keeps a marker there ("front(a)", "dying(a)") the data may lack
            counts.setdefault(_HEAD_MARKER.sub("", key), counts[key])
    adjectives = {offset: words for offset, _, _, words, _ in _synsets(root / "data.adj")}
    out: list[str] = []
    for part, pos in _PARTS:
        for offset, lex_filenum, ss_type, words, pointers in _synsets(root / f"data.{part}"):
            head = ":"
            if ss_type == "s":
                target = next(off for symbol, off, p in pointers if symbol == "&" and p == "a")
                head_word, head_id = adjectives[target][0]
                head = f"{_lemma(head_word)}:{head_id:02d}"
            seen = set()
            for word, lex_id in words:
                lemma = _lemma(word)
                if lemma in seen:  # "Earth 0 earth 1": one sense of earth, the first
                    continue
                seen.add(lemma)
                stem = f"{lemma}%{_SS_TYPE[ss_type]}:{lex_filenum:02d}:{lex_id:02d}:"
                key = stem + head
                count = counts.get(key, "0")
                number = senses[(lemma, pos)].index(offset) + 1
                out.append(f"{key} {offset} {number} {count}\n")
    out.sort()
    return "".join(out).encode("utf-8", "surrogateescape")


def write_sense_index(root: str | os.PathLike, target: str | os.PathLike) -> None:
    """Build ``index.sense`` for ``root`` and write it to ``target`` atomically."""
    target = Path(target)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    tmp.write_bytes(build_sense_index(root))
    os.replace(tmp, target)
