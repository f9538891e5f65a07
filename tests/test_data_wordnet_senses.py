"""``index.sense`` built from WordNet's data files (cotk_repro.data.wordnet_senses) where a WordNet folder lacks it
(Debian's ``wordnet-base`` without ``wordnet-sense-index``): byte for byte Debian's ``wordnet-sense-index`` file,
built by the loader into its copy of the folder, readable by NLTK, and METEOR with that folder equals NLTK's
``meteor_score`` given NLTK's own reader over the same files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from nltk.corpus.reader.wordnet import WordNetCorpusReader
from nltk.translate.meteor_score import meteor_score

from cotk_repro.data import wordnet as wordnet_loader
from cotk_repro.data.wordnet_senses import build_sense_index
from cotk_repro.metrics import get_metric
from cotk_repro.text.reference_hashes import bleu_tokenize

DEBIAN = Path("/usr/share/wordnet")
needs_debian = pytest.mark.skipif(
    not (DEBIAN / "index.sense").is_file()
    or not (DEBIAN / "data.noun").is_file()
    or not (DEBIAN / "cntlist.rev").is_file(),
    reason="Debian's wordnet-base and wordnet-sense-index are not installed",
)


class _NoMapping(WordNetCorpusReader):
    def map_wn(self, version="wordnet"):
        return None


@needs_debian
def test_built_index_sense_is_debians_byte_for_byte():
    assert build_sense_index(DEBIAN) == (DEBIAN / "index.sense").read_bytes()


@pytest.fixture
def without_sense_index(tmp_path, monkeypatch):
    """Debian's WordNet files but index.sense, in a folder of their own; a private cache."""
    folder = tmp_path / "wordnet-base-only"
    folder.mkdir()
    for item in DEBIAN.iterdir():
        if item.is_file() and item.name != "index.sense":
            shutil.copyfile(item, folder / item.name)
    monkeypatch.setenv("COTK_REPRO_CACHE", str(tmp_path / "cache"))
    wordnet_loader.load_wordnet.cache_clear()
    yield folder
    wordnet_loader.load_wordnet.cache_clear()


@needs_debian
def test_loader_builds_it_and_meteor_equals_nltk(without_sense_index, fixtures_dir):
    reader = wordnet_loader.load_wordnet(str(without_sense_index))
    built = Path(reader.root.path if hasattr(reader.root, "path") else str(reader.root)) / "index.sense"
    assert built.read_bytes() == (DEBIAN / "index.sense").read_bytes()
    assert not (without_sense_index / "index.sense").exists()  # the user's folder is left as it is
    # NLTK's own reader over the prepared files reads sense keys through the built file (its start-up mapping to
    # NLTK's multilingual data, which needs NLTK's downloaded copy, left out as the loader leaves it out)
    nltk_reader = _NoMapping(str(built.parent), None)
    assert nltk_reader.lemma_from_key("earth%1:15:00::").synset() == nltk_reader.synset_from_pos_and_offset(
        "n", 8562067
    )
    assert nltk_reader.lemma_from_key("able%5:00:00:capable:00").synset().offset() == 306663

    d = fixtures_dir / "texygen"
    refs = d.joinpath("coco_test.txt").read_text().splitlines()[:150]
    hyps = d.joinpath("instances", "rank.txt").read_text().splitlines()[:150]
    multi = [[r, refs[(i * 7) % len(refs)]] for i, r in enumerate(refs)]
    ours = get_metric("meteor", wordnet=str(without_sense_index)).compute(hyps, multi)
    nltk_value = sum(
        meteor_score([bleu_tokenize(r) for r in rs], bleu_tokenize(h), wordnet=nltk_reader)
        for h, rs in zip(hyps, multi)
    ) / len(hyps)
    assert ours["meteor"] == pytest.approx(nltk_value, rel=1e-12)
    assert "mod:exact+stem+wordnet|" in ours["meteor signature"]
