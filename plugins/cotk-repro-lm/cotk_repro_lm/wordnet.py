"""WordNet without the internet: NLTK's WordNet reader over WordNet 3.0 files on disk.

Looked for in: the folder given, ``$COTK_REPRO_WORDNET``, then Debian's ``wordnet-base`` package
(``/usr/share/wordnet``). Debian's package has no ``lexnames`` file (NLTK's reader needs it); it is the
same 45 lexicographer file names in every WordNet 3.x, so a copy of the folder plus that file is made
once in the cache (NLTK >= 3.9 refuses symbolic and hard links out of its data path).
"""

from __future__ import annotations

import os
import shutil
import warnings
from functools import lru_cache
from pathlib import Path

from cotk_repro.errors import CotkError

DEFAULT_ROOTS = ("/usr/share/wordnet",)
NEEDED = ("data.noun", "data.verb", "data.adj", "data.adv", "index.noun", "index.verb", "index.adj", "index.adv")
LEXNAMES = [
    "adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact", "noun.attribute",
    "noun.body", "noun.cognition", "noun.communication", "noun.event", "noun.feeling", "noun.food", "noun.group",
    "noun.location", "noun.motive", "noun.object", "noun.person", "noun.phenomenon", "noun.plant",
    "noun.possession", "noun.process", "noun.quantity", "noun.relation", "noun.shape", "noun.state",
    "noun.substance", "noun.time", "verb.body", "verb.change", "verb.cognition", "verb.communication",
    "verb.competition", "verb.consumption", "verb.contact", "verb.creation", "verb.emotion", "verb.motion",
    "verb.perception", "verb.possession", "verb.social", "verb.stative", "verb.weather", "adj.ppl",
]
_SYNTACTIC = {"adj": 3, "adv": 4, "noun": 1, "verb": 2}


class WordNetMissing(CotkError):
    """WordNet's files are not where we looked."""


def find_root(folder: str | os.PathLike | None = None) -> Path:
    """The first folder holding WordNet's data and index files."""
    candidates = [folder] if folder else [os.environ.get("COTK_REPRO_WORDNET"), *DEFAULT_ROOTS]
    for c in candidates:
        if c and all((Path(c) / n).is_file() for n in NEEDED):
            return Path(c)
    looked = ", ".join(str(c) for c in candidates if c)
    raise WordNetMissing(f"WordNet 3.0 files not found (looked in {looked}): install Debian's wordnet-base "
                         f"(apt-get install wordnet-base) or point --wordnet / COTK_REPRO_WORDNET at a folder with "
                         f"data.noun, index.noun, ... (NLTK's wordnet corpus folder works too)")


def _with_lexnames(root: Path) -> Path:
    if (root / "lexnames").is_file():
        return root
    from cotk_repro.core.userconfig import cache_dir

    import hashlib

    key = hashlib.sha256(str(root.resolve()).encode("utf-8")).hexdigest()[:16]
    shadow = Path(cache_dir()) / "wordnet-shadow" / key
    shadow.mkdir(parents=True, exist_ok=True)
    for item in root.iterdir():
        link = shadow / item.name
        if item.is_file() and not link.exists():  # a copy: NLTK refuses symbolic and hard links out of its path
            tmp = shadow / f"{item.name}.{os.getpid()}.tmp"
            shutil.copyfile(item, tmp)
            os.replace(tmp, link)
    lex = shadow / "lexnames"
    if not lex.exists():
        tmp = shadow / f"lexnames.{os.getpid()}.tmp"
        tmp.write_text("".join(f"{i:02d}\t{n}\t{_SYNTACTIC[n.split('.')[0]]}\n" for i, n in enumerate(LEXNAMES)),
                       encoding="ascii")
        os.replace(tmp, lex)
    return shadow


@lru_cache(maxsize=4)
def load_wordnet(folder: str | None = None):
    """NLTK's ``WordNetCorpusReader`` over the files found by :func:`find_root`."""
    import nltk.data
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    found = find_root(folder)
    root = _with_lexnames(found)
    for allowed in sorted({str(found.resolve()), str(root.resolve())}):  # NLTK >= 3.9 reads only below its data path
        if allowed not in nltk.data.path:
            nltk.data.path.append(allowed)
    class EnglishWordNet(WordNetCorpusReader):
        def map_wn(self, version="wordnet"):
            return None  # the mapping to NLTK's downloaded "wordnet" corpus serves multilingual data only

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "multilingual functions are not available": not used
        return EnglishWordNet(str(root), None)


def wordnet_version(wn) -> str:
    """``3.0`` for Princeton WordNet 3.0 (read from the data files' licence header)."""
    try:
        return str(wn.get_version())
    except Exception:  # noqa: BLE001 - an odd header: still usable, named as unknown
        return "unknown"
