"""sacrebleu's own chrF and TER test vectors, run through cotk-repro's ``chrf`` and ``ter``.

Source: https://github.com/mjpost/sacrebleu, ``test/test_chrf.py`` and ``test/test_ter.py`` at commit f615c72
(Copyright 2017 Amazon.com, Inc. or its affiliates; Apache License 2.0). Values transcribed, not downloaded;
sacrebleu reports 0-100, cotk-repro the same divided by 100, so every expected value is divided by 100 and
sacrebleu's tolerances likewise (1e-4 and 1e-3 points become 1e-6 and 1e-5).
"""

from __future__ import annotations

import pytest

from cotk_repro.metrics import get_metric

CHRF_EPS = 1e-4 / 100
TER_EPS = 1e-3 / 100

SENTENCE_LEVEL_CHRF = [
    (
        "Co nás nejvíc trápí, protože lékaři si vybírají, kdo bude žít a kdo zemře.",
        ["Nejvíce smutní jsme z toho, že musíme rozhodovat o tom, kdo bude žít a kdo zemře."],
        39.14078509,
    ),
    (
        "Nebo prostě nemají vybavení, které by jim pomohlo, uvedli lékaři.",
        ["A někdy nemáme ani potřebný materiál, abychom jim pomohli, popsali lékaři."],
        31.22557079,
    ),
    (
        "Lapali po dechu, jejich životy skončily dřív, než skutečně začaly.",
        ["Lapali po dechu a pak jejich život skončil - dřív, než skutečně mohl začít, připomněli."],
        57.15704367,
    ),
]

EPS_SMOOTHING = [
    (["abcdefg"], ["hijklmnop"], 0.0),
    (["a"], ["b"], 0.0),
    ([""], ["b"], 0.0),
    ([""], ["ref"], 0.0),
    ([""], ["reference"], 0.0),
    (["aa"], ["ab"], 8.3333),
    (["a", "b"], ["a", "c"], 8.3333),
    (["a"], ["a"], 16.6667),
    (["a b c"], ["a b c"], 50.0),
    (["a b c"], ["abc"], 50.0),
    (
        [
            (
                " risk assessment must be made of those who are qualified and expertise in the sector - these are the "
                "scientists ."
            )
        ],
        [
            (
                "risk assessment has to be undertaken by those who are qualified and expert in that area - that is the "
                "scientists ."
            )
        ],
        63.361730,
    ),
    (
        [" Die    Beziehung zwischen  Obama und Netanjahu ist nicht gerade  freundlich. "],
        ["Das Verhältnis zwischen Obama und Netanyahu ist nicht gerade freundschaftlich."],
        64.1302698,
    ),
    (["Niemand hat die Absicht, eine Mauer zu errichten"], ["Niemand hat die Absicht, eine Mauer zu errichten"], 100.0),
]

EFFECTIVE_ORDER = [
    (["a"], ["a"], 100.0),
    ([""], ["reference"], 0.0),
    (["a b c"], ["a b c"], 100.0),
    (["a b c"], ["abc"], 100.0),
    ([""], ["c"], 0.0),
    (["a", "b"], ["a", "c"], 50.0),
    (["aa"], ["ab"], 25.0),
]

KEEP_WHITESPACE = [
    (
        ["Die Beziehung zwischen Obama und Netanjahu ist nicht gerade freundlich."],
        ["Das Verhältnis zwischen Obama und Netanyahu ist nicht gerade freundschaftlich."],
        67.3481606,
    ),
    (
        [
            (
                "risk assessment must be made of those who are qualified and expertise in the sector - these are the "
                "scientists ."
            )
        ],
        [
            (
                "risk assessment has to be undertaken by those who are qualified and expert in that area - that is the "
                "scientists ."
            )
        ],
        65.2414427,
    ),
]

TER = [
    (["aaaa bbbb cccc dddd"], ["aaaa bbbb cccc dddd"], 0),
    (["dddd eeee ffff"], ["aaaa bbbb cccc"], 1),
    ([""], ["a"], 1),
    (["a"], [""], 1),
    ([""], [""], 0),
    (["d e f g h a b c"], ["a b c d e f g h"], 1 / 8),
    (
        [
            (
                'wählen Sie " Bild neu berechnen , " um beim Ändern der Bildgröße Pixel hinzuzufügen oder zu entfernen , '
                "damit das Bild ungefähr dieselbe Größe aufweist wie die andere Größe ."
            ),
            (
                "wenn Sie alle Aufgaben im aktuellen Dokument aktualisieren möchten , wählen Sie im Menü des "
                'Aufgabenbedienfelds die Option " Alle Aufgaben aktualisieren . "'
            ),
            (
                'klicken Sie auf der Registerkarte " Optionen " auf die Schaltfläche " Benutzerdefiniert " und geben Sie '
                'Werte für " Fehlerkorrektur-Level " und " Y / X-Verhältnis " ein .'
            ),
            "Sie können beispielsweise ein Dokument erstellen , das ein Auto über die Bühne enthält .",
            'wählen Sie im Dialogfeld " Neu aus Vorlage " eine Vorlage aus und klicken Sie auf " Neu . "',
        ],
        [
            (
                'wählen Sie " Bild neu berechnen , " um beim Ändern der Bildgröße Pixel hinzuzufügen oder zu entfernen , '
                "damit die Darstellung des Bildes in einer anderen Größe beibehalten wird ."
            ),
            (
                "wenn Sie alle Aufgaben im aktuellen Dokument aktualisieren möchten , wählen Sie im Menü des "
                'Aufgabenbedienfelds die Option " Alle Aufgaben aktualisieren . "'
            ),
            (
                'klicken Sie auf der Registerkarte " Optionen " auf die Schaltfläche " Benutzerdefiniert " und geben Sie '
                'für " Fehlerkorrektur-Level " und " Y / X-Verhältnis " niedrigere Werte ein .'
            ),
            "Sie können beispielsweise ein Dokument erstellen , das ein Auto enthalt , das sich über die Bühne bewegt .",
            'wählen Sie im Dialogfeld " Neu aus Vorlage " eine Vorlage aus und klicken Sie auf " Neu . "',
        ],
        0.136,
    ),
]


@pytest.mark.parametrize("hypotheses, references, expected", EPS_SMOOTHING)
def test_chrf(hypotheses, references, expected):
    m = get_metric("chrf", char_order=6, word_order=0, beta=3, eps_smoothing=True)
    assert abs(m.compute(hypotheses, [[r] for r in references])["chrf"] - expected / 100) < CHRF_EPS


@pytest.mark.parametrize("hypotheses, references, expected", EFFECTIVE_ORDER)
def test_chrf_eff_order(hypotheses, references, expected):
    m = get_metric("chrf", char_order=6, word_order=0, beta=3, eps_smoothing=False)
    assert abs(m.compute(hypotheses, [[r] for r in references])["chrf"] - expected / 100) < CHRF_EPS


@pytest.mark.parametrize("hypotheses, references, expected", KEEP_WHITESPACE)
def test_chrf_keep_whitespace(hypotheses, references, expected):
    m = get_metric("chrf", char_order=6, word_order=0, beta=3, whitespace=True)
    assert abs(m.compute(hypotheses, [[r] for r in references])["chrf"] - expected / 100) < CHRF_EPS


@pytest.mark.parametrize("hypothesis, references, expected", SENTENCE_LEVEL_CHRF)
def test_chrf_sentence_level(hypothesis, references, expected):
    m = get_metric("chrf", eps_smoothing=True)
    assert abs(m.sentence_scores([hypothesis], [references])[0] - expected / 100) < CHRF_EPS


@pytest.mark.parametrize("hypotheses, references, expected", TER)
def test_ter(hypotheses, references, expected):
    assert abs(get_metric("ter").compute(hypotheses, [[r] for r in references])["ter"] - expected) < TER_EPS
