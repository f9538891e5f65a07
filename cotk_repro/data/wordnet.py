"""WordNet 3.0 without the internet: one loader for METEOR (core) and the LM plugin's synonyms.

Looked for, in order: the folder given, ``$COTK_REPRO_WORDNET``, ``corpora/wordnet`` in every folder of NLTK's data
path (where ``python -m nltk.downloader wordnet`` puts it, unzipped or as ``wordnet.zip``), then Debian's
``wordnet-base`` (``/usr/share/wordnet``). A folder counts when it holds the data and index files of the four parts
of speech. Debian's package has no ``lexnames`` file, which NLTK's reader needs at start-up: it is the same 45
lexicographer file names in every WordNet 3.x, so a copy of the folder plus that file is made once in the cache
(NLTK >= 3.9 refuses symbolic and hard links out of its data path). ``index.sense`` (Debian's
``wordnet-sense-index``) is copied along where present and built from the data, index and ``cntlist.rev`` files
where it is not (:mod:`cotk_repro.data.wordnet_senses`; byte for byte Debian's file); NLTK reads it only for sense
keys (``lemma_from_key``), which neither METEOR nor the synonym search uses. The reader never maps to NLTK's
multilingual data (``map_wn``), which is what asked for ``index.sense`` at start-up.

:func:`load_wordnet` never raises anything but :class:`WordNetMissing` (one sentence: what to install) for files
it cannot find or read.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import warnings
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import CotkError

DEFAULT_ROOTS = ("/usr/share/wordnet",)
NEEDED = ("data.noun", "data.verb", "data.adj", "data.adv", "index.noun", "index.verb", "index.adj", "index.adv")
LEXNAMES = [
    "adj.all",
    "adj.pert",
    "adv.all",
    "noun.Tops",
    "noun.act",
    "noun.animal",
    "noun.artifact",
    "noun.attribute",
    "noun.body",
    "noun.cognition",
    "noun.communication",
    "noun.event",
    "noun.feeling",
    "noun.food",
    "noun.group",
    "noun.location",
    "noun.motive",
    "noun.object",
    "noun.person",
    "noun.phenomenon",
    "noun.plant",
    "noun.possession",
    "noun.process",
    "noun.quantity",
    "noun.relation",
    "noun.shape",
    "noun.state",
    "noun.substance",
    "noun.time",
    "verb.body",
    "verb.change",
    "verb.cognition",
    "verb.communication",
    "verb.competition",
    "verb.consumption",
    "verb.contact",
    "verb.creation",
    "verb.emotion",
    "verb.motion",
    "verb.perception",
    "verb.possession",
    "verb.social",
    "verb.stative",
    "verb.weather",
    "adj.ppl",
]
_SYNTACTIC = {"adj": 3, "adv": 4, "noun": 1, "verb": 2}
INSTALL = (
    "install WordNet 3.0: Debian's packages (apt-get install wordnet-base wordnet-sense-index) or NLTK's "
    "corpus (python -m nltk.downloader wordnet), or point COTK_REPRO_WORDNET at a folder with data.noun, "
    "index.noun, ..."
)


class WordNetMissing(CotkError):
    """WordNet's files are not where we looked (or cannot be read)."""


def _nltk_candidates() -> list[str]:
    """``corpora/wordnet`` (a folder, or ``wordnet.zip`` unpacked into the cache) in NLTK's data path."""
    try:
        import nltk.data
    except ImportError:  # pragma: no cover - nltk is a dependency
        return []
    out = []
    for base in nltk.data.path:
        folder = Path(base) / "corpora" / "wordnet"
        if folder.is_dir():
            out.append(str(folder))
        elif (folder.parent / "wordnet.zip").is_file():
            out.append(str(folder.parent / "wordnet.zip"))
    return out


def candidates(folder: str | os.PathLike | None = None) -> list[str]:
    """Where :func:`find_root` looks, in order."""
    if folder:
        return [str(folder)]
    env = os.environ.get("COTK_REPRO_WORDNET")
    return [c for c in (env, *_nltk_candidates(), *DEFAULT_ROOTS) if c]


def _complete(path: Path) -> bool:
    try:
        return all((path / n).is_file() for n in NEEDED)
    except OSError:  # unreadable folder
        return False


def _unzipped(zip_path: Path) -> Path | None:
    """NLTK's ``wordnet.zip`` unpacked once into the cache (its ``wordnet/`` folder), None if it has no WordNet."""
    import zipfile

    from ..core.userconfig import cache_dir

    key = hashlib.sha256(f"{zip_path.resolve()}:{zip_path.stat().st_mtime_ns}".encode()).hexdigest()[:16]
    target = Path(cache_dir()) / "wordnet-unzipped" / key
    if not _complete(target / "wordnet"):
        try:
            with zipfile.ZipFile(zip_path) as zf:
                names = [n for n in zf.namelist() if n.startswith("wordnet/") and ".." not in n]
                zf.extractall(target, members=names)
        except (OSError, zipfile.BadZipFile):
            return None
    return target / "wordnet" if _complete(target / "wordnet") else None


def find_root(folder: str | os.PathLike | None = None) -> Path:
    """The first folder holding WordNet's data and index files (see the module's docstring)."""
    looked = candidates(folder)
    for c in looked:
        path = Path(c)
        if path.suffix == ".zip" and path.is_file():
            unzipped = _unzipped(path)
            if unzipped is not None:
                return unzipped
        elif _complete(path):
            return path
    raise WordNetMissing(f"WordNet 3.0 files not found (looked in {', '.join(looked) or 'nothing'}): {INSTALL}")


def _prepared(root: Path) -> Path:
    """``root`` itself when NLTK's reader can start from it and it has ``index.sense``, else a copy in the cache with
    ``lexnames`` added and ``index.sense`` built where missing."""
    if (root / "lexnames").is_file() and (root / "index.sense").is_file():
        return root
    from ..core.userconfig import cache_dir

    key = hashlib.sha256(str(root.resolve()).encode("utf-8")).hexdigest()[:16]
    shadow = Path(cache_dir()) / "wordnet-shadow" / key
    shadow.mkdir(parents=True, exist_ok=True)
    for item in root.iterdir():
        copy = shadow / item.name
        if item.is_file() and (not copy.exists() or copy.stat().st_size != item.stat().st_size):
            tmp = shadow / f"{item.name}.{os.getpid()}.tmp"  # a copy: NLTK refuses links out of its data path
            shutil.copyfile(item, tmp)
            os.replace(tmp, copy)
    lex = shadow / "lexnames"
    if not lex.exists():
        tmp = shadow / f"lexnames.{os.getpid()}.tmp"
        tmp.write_text(
            "".join(f"{i:02d}\t{n}\t{_SYNTACTIC[n.split('.')[0]]}\n" for i, n in enumerate(LEXNAMES)), encoding="ascii"
        )
        os.replace(tmp, lex)
    if not (shadow / "index.sense").exists():
        from .wordnet_senses import write_sense_index

        write_sense_index(root, shadow / "index.sense")
    return shadow


@lru_cache(maxsize=4)
def load_wordnet(folder: str | None = None) -> Any:
    """NLTK's ``WordNetCorpusReader`` over the files found by :func:`find_root`; :class:`WordNetMissing` (one
    sentence) when none is found or the files cannot be read."""
    found = find_root(folder)  # before importing NLTK (seconds): a folder without WordNet is refused at once
    import nltk.data
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    try:
        root = _prepared(found)
        for allowed in sorted({str(found.resolve()), str(root.resolve())}):  # NLTK >= 3.9 reads only its path
            if allowed not in nltk.data.path:
                nltk.data.path.append(allowed)

        class EnglishWordNet(WordNetCorpusReader):
            def map_wn(self, version: str = "wordnet") -> None:
                return None  # the mapping to NLTK's multilingual data: not used, and it needs index.sense

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "multilingual functions are not available": not used
            reader = EnglishWordNet(str(root), None)
        reader.synsets("dog")  # reads the index and data files now, not in the middle of a metric
    except Exception as exc:
        raise WordNetMissing(
            f"WordNet files in {found} cannot be read ({type(exc).__name__}: {exc}): {INSTALL}"
        ) from None
    reader.cotk_repro_root = str(found)
    return reader


def wordnet_version(wn: Any) -> str:
    """``3.0`` for Princeton WordNet 3.0 (read from the data files' licence header)."""
    try:
        return str(wn.get_version())
    except Exception:
        return "unknown"


def wordnet_available(folder: str | None = None) -> bool:
    """Whether :func:`load_wordnet` finds WordNet (no download is ever attempted)."""
    try:
        load_wordnet(folder)
        return True
    except WordNetMissing:
        return False
