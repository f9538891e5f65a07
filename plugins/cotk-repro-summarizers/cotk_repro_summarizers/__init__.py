"""cotk-repro-summarizers: extractive summarizers (sumy's LexRank, TextRank, LSA, Luhn, random; lead-k;
SMMRY-style) as ``cotk-repro compare`` generators, one document in and one summary out."""

__version__ = "0.1.0"
