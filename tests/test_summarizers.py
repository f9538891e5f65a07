"""The first-party plugin cotk-repro-summarizers (plugins/cotk-repro-summarizers): its generators against sumy
itself, lead/SMMRY/random by hand, sentence splitting, settings in the cache key, errors.

Skips (with the reason) only when the plugin is not installed; scripts/setup.sh installs every plugins/*/.
"""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip(
    "cotk_repro_summarizers",
    reason="plugin cotk-repro-summarizers not installed (pip install -e plugins/cotk-repro-summarizers)",
)
pytest.importorskip("sumy", reason="sumy (the plugin's dependency) is not installed")

from sumy.models.dom import ObjectDocumentModel, Paragraph, Sentence
from sumy.nlp.stemmers import Stemmer
from sumy.utils import get_stop_words

from cotk_repro.compare.generate import generate_cached
from cotk_repro.generation import GeneratorError, make_generator
from cotk_repro.plugins import get_plugins
from cotk_repro_summarizers.sentences import ABBREVIATIONS, rule_split

NAMES = ("lexrank", "textrank", "lsa", "luhn", "random", "lead", "smmry")

DOCS = [
    (
        "The city council met on Monday to discuss the river park. Mr. Smith proposed a new park near the river. "
        "The park would cost 2.5 million dollars, paid by the city. Residents at the meeting supported the park plan. "
        "J. Doe, a local teacher, said children need the park. The council will vote on the park plan next week."
    ),
    (
        "A storm hit the coast on Tuesday night. Strong winds knocked down trees and power lines across the coast. "
        "About 40,000 homes lost power during the storm. Crews worked through the night to restore power. "
        "Schools on the coast stayed closed on Wednesday. Forecasters expect calmer weather by the weekend."
    ),
    "Only one sentence here.",
]


class _Words:
    """An independent tokenizer for sumy (the test's own): sentences by the rule, words by a regex."""

    language = "english"

    def to_sentences(self, text):
        return tuple(rule_split(text))

    def to_words(self, sentence):
        return tuple(w for w in re.findall(r"\w+|[^\w\s]+", sentence) if re.search(r"[^\W\d_]", w))


def _sumy_reference(module, cls, text, count, stop_words=True, ratings=None):
    """sumy's own summary of ``text``; ``ratings``: a dict that receives sumy's rating of each sentence."""
    import importlib

    tok = _Words()
    doc = ObjectDocumentModel([Paragraph([Sentence(s, tok) for s in tok.to_sentences(text)])])
    summarizer = getattr(importlib.import_module(f"sumy.summarizers.{module}"), cls)(Stemmer("english"))
    if stop_words:
        summarizer.stop_words = get_stop_words("english")
    if cls == "LsaSummarizer":  # the plugin numbers the term rows in sorted order (sumy: frozenset order)
        create = summarizer._create_dictionary
        summarizer._create_dictionary = lambda d: {w: i for i, w in enumerate(sorted(create(d)))}
    if ratings is not None:
        best = summarizer._get_best_sentences

        def recording(sentences, n, rating, *args, **kwargs):
            rate = rating.__getitem__ if isinstance(rating, dict) else rating
            values = [rate(s, *args, **kwargs) for s in sentences]
            ratings.update({str(s): float(v) for s, v in zip(sentences, values)})
            return best(sentences, n, dict(zip(sentences, values)))

        summarizer._get_best_sentences = recording
    return " ".join(str(s) for s in summarizer(doc, count))


def test_plugin_registers_every_generator_through_its_entry_point():
    registry = get_plugins().registry("generator")
    for name in NAMES:
        assert name in registry, name
        assert registry[name].plugin != "cotk_repro.builtins.generators"


@pytest.mark.parametrize(
    "name,module,cls",
    [
        ("lexrank", "lex_rank", "LexRankSummarizer"),
        ("textrank", "text_rank", "TextRankSummarizer"),
        ("lsa", "lsa", "LsaSummarizer"),
        ("luhn", "luhn", "LuhnSummarizer"),
    ],
)
@pytest.mark.parametrize("count", [1, 2, 3])
def test_sumy_generators_choose_what_sumy_chooses(name, module, cls, count):
    """The same sentences as sumy, but where sumy's ratings tie (to rounding): sumy then follows the last bits of
    its BLAS/LAPACK results, the plugin (exact) the earlier sentence; both choices are equally rated by sumy."""
    gen = make_generator(name, {"sentences": count, "sentence_splitter": "rule"})
    got = gen.generate(DOCS)
    for doc, summary in zip(DOCS, got):
        ratings: dict[str, float] = {}
        theirs = _sumy_reference(module, cls, doc, count, ratings=ratings)
        if summary != theirs:  # equally rated choices
            mine = sorted(ratings[s] for s in rule_split(summary))
            assert mine == pytest.approx(sorted(ratings[s] for s in rule_split(theirs)), rel=1e-12), (summary, theirs)
    for doc, summary in zip(DOCS, got):
        sentences = rule_split(doc)
        chosen = rule_split(summary)
        assert len(chosen) == min(count, len(sentences))
        assert chosen == [s for s in sentences if s in chosen]  # document order


def test_summaries_do_not_depend_on_the_hash_seed(tmp_path):
    """Each generator in fresh processes with different PYTHONHASHSEED values: the same summaries (sumy's LSA
    alone would not give them: its term rows follow a frozenset's order)."""
    import os
    import subprocess
    import sys

    script = (
        "import json, sys\nfrom cotk_repro.generation import make_generator\n"
        f"docs = {DOCS!r}\n"
        f"print(json.dumps({{n: make_generator(n, {{'sentences': 3}}).generate(docs) for n in {NAMES!r}}}))\n"
    )
    outs = set()
    for seed in ("1", "2", "3"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        outs.add(r.stdout)
    assert len(outs) == 1


# -- the same summaries on any machine: no BLAS or LAPACK in the rankings -------------------------------------

TIED = "Alpha beta gamma delta. Epsilon zeta eta theta. Iota kappa lambda mu. Nu xi omicron pi. Rho sigma tau upsilon."


@pytest.mark.parametrize(("name", "module"), [("lexrank", "lex_rank"), ("textrank", "text_rank"), ("lsa", "lsa")])
def test_a_tie_goes_to_the_earlier_sentence_whatever_the_blas_rounding(monkeypatch, name, module):
    """Five sentences with no word in common: every ranking ties. sumy's own choice follows the last bits of
    numpy's BLAS and LAPACK (here made to favour later sentences, as another CPU's kernels may); the plugin's
    exact rankings choose the first sentences, and the same with or without the noise."""
    import importlib

    import numpy

    sentences = rule_split(TIED)
    gen = make_generator(name, {"sentences": 2, "sentence_splitter": "rule"})
    clean = gen.generate([TIED])
    assert clean == [" ".join(sentences[:2])]
    real_dot, real_svd = numpy.dot, numpy.linalg.svd

    def noisy_dot(a, b):  # one more ulp for each later row: what another summation order may give
        out = real_dot(a, b)
        return out * (1 + 1e-15 * numpy.arange(1, len(out) + 1))

    def noisy_svd(m, full_matrices=True):
        u, s, v = real_svd(m, full_matrices=full_matrices)
        return u, s, v * (1 + 1e-15 * numpy.arange(1, v.shape[1] + 1))

    sumy_module = importlib.import_module(f"sumy.summarizers.{module}")
    monkeypatch.setattr(sumy_module.numpy, "dot", noisy_dot) if module != "lsa" else monkeypatch.setattr(
        sumy_module, "singular_value_decomposition", noisy_svd
    )
    cls = {"lex_rank": "LexRankSummarizer", "text_rank": "TextRankSummarizer", "lsa": "LsaSummarizer"}[module]
    assert _sumy_reference(module, cls, TIED, 2) != clean[0]  # sumy's choice followed the rounding
    assert make_generator(name, {"sentences": 2, "sentence_splitter": "rule"}).generate([TIED]) == clean


def test_lsa_ranks_are_the_column_norms_sumys_svd_gives():
    """With every dimension kept, sumy's rank sqrt(sum_i s_i^2 v_ij^2) is the norm of a column of the smoothed
    term frequencies: the plugin's exact ranks against sumy's SVD on this machine (within rounding)."""
    import math

    from sumy.summarizers.lsa import LsaSummarizer

    from cotk_repro_summarizers.generators import lsa_ranks

    gen = make_generator("lsa", {"sentence_splitter": "rule"})
    summarizer = gen._summarizer
    assert LsaSummarizer.REDUCTION_RATIO >= 1  # the identity holds when sumy keeps every dimension
    for text in DOCS[:2]:
        doc = gen.document(text)
        counts = summarizer._create_matrix(doc, summarizer._create_dictionary(doc))
        exact = lsa_ranks(counts.copy())
        matrix = summarizer._compute_term_frequency(counts.copy())
        import numpy

        _, sigma, v = numpy.linalg.svd(matrix, full_matrices=False)
        for mine, theirs in zip(exact, summarizer._compute_ranks(sigma, v)):
            assert math.sqrt(mine) == pytest.approx(theirs, rel=1e-12)


def test_lead_and_word_budget():
    sentences = rule_split(DOCS[0])
    assert make_generator("lead", {"sentences": 2}).generate(DOCS[:1]) == [" ".join(sentences[:2])]
    # 11 + 9 words fit in 20; the third sentence (11 words) does not
    assert [len(s.split()) for s in sentences[:3]] == [11, 9, 11]
    assert make_generator("lead", {"words": 20}).generate(DOCS[:1]) == [" ".join(sentences[:2])]
    assert make_generator("lead", {"words": 30}).generate(DOCS[:1]) == [" ".join(sentences[:2])]
    assert make_generator("lead", {"words": 31}).generate(DOCS[:1]) == [" ".join(sentences[:3])]
    assert make_generator("lead", {"words": 3}).generate(DOCS[:1]) == [sentences[0]]  # at least one sentence
    assert make_generator("lead", {"sentences": 9, "joiner": " | "}).generate(DOCS[2:]) == ["Only one sentence here."]


def test_smmry_rates_sentences_by_the_counts_of_their_words():
    doc = "Cats chase mice. Dogs chase cats and cats run. The sun is warm. Mice hide from cats."
    # stems with counts: cat 4, chase 2, mice 2, dog 1, run 1, sun 1, warm 1, hide 1
    # ratings: s1 = chase 2 + mice 2 + cat 4 = 8; s2 = dog 1 + chase 2 + cat 4 + cat 4 + run 1 = 12;
    # s3 = sun 1 + warm 1 = 2; s4 = mice 2 + hide 1 + cat 4 = 7
    assert make_generator("smmry", {"sentences": 2}).generate([doc]) == [
        "Cats chase mice. Dogs chase cats and cats run."
    ]
    assert make_generator("smmry", {"sentences": 1}).generate([doc]) == ["Dogs chase cats and cats run."]


def test_random_is_seeded_per_document_and_batch_independent():
    docs = DOCS * 3
    a = make_generator("random", {"sentences": 2, "seed": 7})
    out = a.generate(docs)
    assert out == make_generator("random", {"sentences": 2, "seed": 7}).generate(docs)
    assert out == [a.generate([d])[0] for d in docs]
    assert out[0] == out[3] == out[6]
    seeds = {make_generator("random", {"sentences": 2, "seed": s}).generate(DOCS[:1])[0] for s in range(12)}
    assert len(seeds) > 3  # different seeds choose different sentences
    for summary in seeds:  # in document order
        chosen = rule_split(summary)
        assert chosen == [s for s in rule_split(DOCS[0]) if s in chosen]


def test_rule_splitter():
    text = (
        'Mr. Smith met Dr. J. Watson at 5 p.m. on Baker St. in London. "Is it true?" he asked. '
        "Prices rose 2.5 percent (a record). It was late! 3 people left."
    )
    assert rule_split(text) == [
        "Mr. Smith met Dr. J. Watson at 5 p.m. on Baker St. in London.",
        '"Is it true?" he asked.',
        "Prices rose 2.5 percent (a record).",
        "It was late!",
        "3 people left.",
    ]
    assert "st" in ABBREVIATIONS and rule_split("") == []


def test_declared_separator_and_tags():
    doc = "first sentence is short </s> second sentence mentions the park twice , park </s> third one"
    gen = make_generator("lead", {"sentences": 2, "sentence_separator": "</s>"})
    assert gen.generate([doc]) == ["first sentence is short second sentence mentions the park twice , park"]
    assert gen.settings["sentence_splitter"] == "separator"


def test_settings_go_into_the_cache_key(tmp_path):
    inputs = tmp_path / "docs.txt"
    inputs.write_text("\n".join(DOCS) + "\n", encoding="utf-8")
    cache = tmp_path / "cache"
    out1, reused1 = generate_cached("lexrank", {"sentences": 1}, inputs, cache)
    out2, reused2 = generate_cached("lexrank", {"sentences": 1}, inputs, cache)
    out3, _ = generate_cached("lexrank", {"sentences": 2}, inputs, cache)
    out4, _ = generate_cached("lexrank", {"sentences": 1, "stemmer": False}, inputs, cache)
    assert (reused1, reused2) == (False, True) and out1 == out2
    assert len({out1, out3, out4}) == 3
    meta = json.loads(out1.with_suffix(".json").read_text())
    assert meta["generator"] == "lexrank" and meta["version"].startswith("2+sumy")
    assert meta["settings"]["sentence_splitter"] in ("rule", "punkt")
    assert meta["settings"]["sentences"] == 1 and meta["settings"]["stop_words"] is True
    assert len(out1.read_text().splitlines()) == len(DOCS)


@pytest.mark.parametrize(
    "settings,message",
    [
        ({"sentences": 0}, "sentences"),
        ({"words": "ten"}, "words"),
        ({"stemmer": "yes"}, "stemmer"),
        ({"sentence_splitter": "magic"}, "sentence_splitter"),
        ({"colour": "red"}, "unknown setting"),
        ({"language": "klingon"}, "klingon"),
    ],
)
def test_bad_settings(settings, message):
    # make_generator turns a factory's refusal into one sentence naming the generator (GeneratorError)
    with pytest.raises(GeneratorError, match=message):
        make_generator("lexrank", settings)


def test_plugins_command_lists_them(cli):
    r = cli("plugins", "--json")
    assert r.returncode == 0, r
    text = r.stdout
    for name in NAMES:
        assert f'"{name}"' in text


# -- the summarization example against its committed reference report ------------------------------------

EXAMPLE = __import__("pathlib").Path(__file__).resolve().parent.parent / "examples" / "summarization"
REGENERATE = (
    "if a summarizer or metric changed on purpose, regenerate the reference: cotk-repro compare "
    "examples/summarization/benchmark.toml --out examples/summarization/reference-report"
)


def _csv_files(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.csv"))}


def test_summarization_example_reproduces_its_reference_report(tmp_path):
    """The example end to end (generators with an empty cache, every metric): every CSV byte for byte (the
    values in shortest exact form and the hashes), the same chart files, and results.json's cells."""
    from cotk_repro.compare import evaluate_config, load_config
    from cotk_repro.compare.report import write_report

    cfg = load_config(EXAMPLE / "benchmark.toml", out=tmp_path / "report")
    cfg.cache = tmp_path / "cache"
    result = evaluate_config(cfg, jobs=1)
    assert not result.failures, result.failures
    assert set(result.generated.values()) == {"generated"} and len(result.generated) == 7 * 2
    write_report(result, tmp_path / "report")
    reference = EXAMPLE / "reference-report"
    fresh, committed = _csv_files(tmp_path / "report"), _csv_files(reference)
    assert sorted(fresh) == sorted(committed)
    for name in committed:
        assert fresh[name] == committed[name], (name, REGENERATE)
    assert {p.name for p in (tmp_path / "report").glob("chart-*.png")} == {
        p.name for p in reference.glob("chart-*.png")
    }
    cells = lambda p: json.loads((p / "results.json").read_text(encoding="utf-8"))["cells"]  # noqa: E731
    assert cells(tmp_path / "report") == cells(reference)
    columns = {c.column for c in result.cells}
    assert columns == {"rouge-1", "rouge-2", "rouge-l", "meteor", "cider", "bleu"}
    assert {c.group for c in result.cells} == {"A"} and all(len(c.hash) == 64 for c in result.cells)


def test_summarization_reference_lead_values_equal_independent_implementations():
    """lead-2 on the news corpus by hand (the first two lines of each document, tokenized and lowercased as
    the format says): the committed CIDEr equals pycocoevalcap's and ROUGE equals google's rouge-score."""
    import csv

    pytest.importorskip("pycocoevalcap", reason="pycocoevalcap (a test dependency) is not installed")
    from nltk.tokenize import WordPunctTokenizer
    from pycocoevalcap.cider.cider import Cider
    from rouge_score import rouge_scorer

    tok = WordPunctTokenizer().tokenize
    norm = lambda text: " ".join(tok(text)).lower()  # noqa: E731
    docs = sorted((EXAMPLE / "data" / "news" / "inputs").glob("*.txt"))
    hyps = [norm(" ".join(d.read_text(encoding="utf-8").splitlines()[:2])) for d in docs]
    refs = [
        [norm(r) for r in json.loads(line)["references"]]
        for line in (EXAMPLE / "data" / "news" / "gold" / "refs.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    with open(EXAMPLE / "reference-report" / "corpus-news.csv", newline="", encoding="utf-8") as fh:
        committed = {row["system"]: row for row in csv.DictReader(fh)}["lead-2"]
    cider, _ = Cider().compute_score({i: r for i, r in enumerate(refs)}, {i: [h] for i, h in enumerate(hyps)})
    assert abs(float(committed["cider"]) - cider) <= 1e-9
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"])
    for rtype, column in (("rouge1", "rouge-1"), ("rouge2", "rouge-2"), ("rougeL", "rouge-l")):
        expected = sum(scorer.score_multi(rs, h)[rtype].fmeasure for h, rs in zip(hyps, refs)) / len(hyps)
        assert float(committed[column]) == pytest.approx(expected, abs=1e-12)
