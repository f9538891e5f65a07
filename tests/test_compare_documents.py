"""Documents in, summaries out: generator inputs as a file or a folder of documents, with the text format applied
to documents as to gold and samples, and the format in the cache key (built-in ``copy`` generator)."""

from __future__ import annotations

import json

import pytest
from test_compare import write as _write

from cotk_repro.compare import compare
from cotk_repro.text.textfmt import TextFormat, document_normalizer, inputs_sha256, iter_documents


def test_document_normalizer_keeps_the_separator_and_formats_each_sentence():
    fmt = TextFormat(tokenized=False, tokenizer="nltk", strip_tags=("<s>",), sentence_separator="</s>", lowercase=True)
    norm = document_normalizer(fmt)
    assert norm("<s> Mr. Smith came. </s> <s> He left! </s>") == "mr . smith came . </s> he left !"
    assert document_normalizer(TextFormat())("a   b\tc") == "a b c"


def test_inputs_folder_one_document_per_file(tmp_path):
    folder = _write(
        tmp_path / "docs", {"b.txt": "Second doc.\n\nIts line two.\n", "a.txt": "First doc.\n", "notes.md": "ignored\n"}
    )
    fmt = TextFormat(sentence_separator="</s>")
    assert list(iter_documents(folder, fmt)) == ["First doc.", "Second doc. </s> Its line two."]
    assert list(iter_documents(folder, TextFormat())) == ["First doc.", "Second doc. Its line two."]
    before = inputs_sha256(folder)
    (folder / "a.txt").write_text("First doc!\n", encoding="utf-8")
    assert inputs_sha256(folder) != before
    (folder / "a.txt").rename(folder / "c.txt")
    assert inputs_sha256(folder) != before


def test_compare_summarizes_a_folder_of_documents_with_one_format(tmp_path):
    root = _write(
        tmp_path / "p",
        {
            "data/d/inputs/01.txt": "<s>The Cat sat.</s>\n<s>It purred.</s>\n",
            "data/d/inputs/02.txt": "<s>A dog ran.</s>\n",
            "data/d/gold/refs.txt": "<s>the cat sat .</s> <s>it purred .</s>\n<s>a dog ran .</s>\n",
            "bench.toml": """
            [report]
            cache = "cache"
            charts = false
            html = false
            [format]
            tokenized = false
            strip_tags = ["<s>"]
            sentence_separator = "</s>"
            lowercase = true
            [[dataset]]
            name = "d"
            path = "data/d"
            [[system]]
            name = "copy"
            generator = "copy"
            [[metric]]
            name = "bleu"
            """,
        },
    )
    result, _ = compare(root / "bench.toml", jobs=1)
    assert not result.failures, result.failures
    out = next((root / "cache").rglob("*.txt"))
    # the documents, formatted sentence by sentence, separator kept for the generator
    assert out.read_text(encoding="utf-8") == "the cat sat . </s> it purred .\na dog ran .\n"
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["input_format"]["sentence_separator"] == "</s>" and meta["lines"] == 2
    assert result.cell("copy", "d", "bleu").value == pytest.approx(1.0)  # the samples' format drops the separator
    # another inputs format is another cache entry
    toml = (
        (root / "bench.toml")
        .read_text()
        .replace('path = "data/d"', 'path = "data/d"\ninputs_format = { lowercase = false }')
    )
    (root / "bench.toml").write_text(toml)
    result, _ = compare(root / "bench.toml", jobs=1)
    assert result.generated == {("copy", "d"): "generated"}
    assert len(list((root / "cache").rglob("*.txt"))) == 2


def test_missing_inputs_folder_is_a_config_error(tmp_path, cli):
    root = _write(
        tmp_path / "p",
        {
            "data/d/gold/refs.txt": "a\n",
            "bench.toml": """
            [[dataset]]
            name = "d"
            path = "data/d"
            inputs = "data/d/documents"
            [[system]]
            name = "copy"
            generator = "copy"
            [[metric]]
            name = "bleu"
            """,
        },
    )
    r = cli("compare", str(root / "bench.toml"))
    assert r.returncode == 2
    assert "inputs file or folder data/d/documents does not exist" in r.stderr
