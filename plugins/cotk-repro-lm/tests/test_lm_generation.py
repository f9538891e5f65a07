"""Generators `hf` and `openai`: against plain `model.generate`, across batch sizes, and against a real
OpenAI-compatible server (`transformers serve`) on the same tiny model."""

from __future__ import annotations

import shutil

import pytest

# fixtures are imported by name (no conftest.py: see lm_support)
from lm_support import (  # noqa: F401
    OPENSUB,
    _isolated_dirs,
    bpe_json,
    make_gpt2,
    tiny_gpt2,
)

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch==2.13.0)")
pytest.importorskip(
    "cotk_repro_lm", reason="the cotk-repro-lm plugin is not installed (pip install -e plugins/cotk-repro-lm)"
)

from cotk_repro_lm.generation import GenerationError  # noqa: E402
from cotk_repro_lm.generation.hf import HFGenerator  # noqa: E402

NEW = 8
#: eight prompts of different lengths (1 to ~20 tokens), so a batch of 8 pads most of them
PROMPTS = (OPENSUB / "opensub_pair_test.post").read_text(encoding="utf-8").splitlines()[:7] + ["so"]
CHAT_TEMPLATE = (
    "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)


@pytest.fixture(scope="module")
def gen1(tiny_gpt2):
    return HFGenerator(str(tiny_gpt2), max_new_tokens=NEW, batch_size=1)


@pytest.fixture(scope="module")
def reference(tiny_gpt2):
    """Each prompt alone through plain `model.generate` (no padding at all), greedy: the new token ids up to the
    end of text."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_gpt2)
    model = AutoModelForCausalLM.from_pretrained(tiny_gpt2).eval()
    out = []
    for p in PROMPTS:
        ids = torch.tensor([tok(p)["input_ids"]])
        with torch.no_grad():
            seq = model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=NEW,
                do_sample=False,
                pad_token_id=tok.eos_token_id,
            )
        new = seq[0, ids.shape[1] :].tolist()
        out.append(new[: new.index(tok.eos_token_id)] if tok.eos_token_id in new else new)
    return out


def test_hf_greedy_equals_plain_generate_at_batch_1_and_8(tiny_gpt2, gen1, reference):
    gen8 = HFGenerator(str(tiny_gpt2), max_new_tokens=NEW, batch_size=8)
    ids1, ids8 = gen1.generate_ids(PROMPTS), gen8.generate_ids(PROMPTS)
    assert ids1 == reference
    assert ids8 == reference  # left padding: token for token the same as each prompt alone
    assert any(len(r) == NEW for r in reference)  # the comparison covers full-length outputs
    texts = gen8.generate(PROMPTS)
    assert texts == gen1.tokenizer.batch_decode(reference, skip_special_tokens=True)
    # greedy: the batch size is not part of the system, the weights and tokenizer are
    assert gen8.settings == gen1.settings
    assert {"weights_sha256", "tokenizer_sha256", "max_new_tokens", "stop", "seed"} <= set(gen1.settings)
    assert gen1.settings["model"] == tiny_gpt2.name and str(tiny_gpt2.parent) not in repr(gen1.settings)
    assert gen1.pinned is True and gen1.accepts_prompts is True


def test_hf_sampling_is_seeded(tiny_gpt2):
    a = HFGenerator(str(tiny_gpt2), max_new_tokens=NEW, do_sample=True, temperature=1.5, seed=3, batch_size=4)
    again = a.generate(PROMPTS)
    assert a.generate(PROMPTS) == again  # a rerun draws the same outputs
    b = HFGenerator(str(tiny_gpt2), max_new_tokens=NEW, do_sample=True, temperature=1.5, seed=4, batch_size=4)
    assert b.generate(PROMPTS) != again
    assert a.settings["batch_size"] == 4 and a.settings["seed"] == 3


def test_hf_stop_strings_cut_and_stop_early(tiny_gpt2, gen1, reference):
    full = gen1.tokenizer.batch_decode(reference, skip_special_tokens=True)
    # a stop string taken from inside one greedy output: that output is cut right before it
    i = next(k for k, t in enumerate(full) if len(t.strip()) >= 4)
    text = full[i]
    stop = text[len(text) // 2 : len(text) // 2 + 2]
    gen = HFGenerator(str(tiny_gpt2), max_new_tokens=NEW, stop=[stop], batch_size=8)
    got = gen.generate(PROMPTS)
    for want, out in zip(full, got, strict=True):
        assert out == want[: want.find(stop)] if stop in want else out == want
    assert got[i] == text[: text.find(stop)] and len(got[i]) < len(text)
    # and generation ended early (fewer tokens than without the stop string)
    ids = gen.generate_ids([PROMPTS[i]])[0]
    assert len(ids) < len(reference[i])
    assert gen.settings["stop"] == [stop] and gen.settings != gen1.settings


def test_hf_chat_template(tmp_path, tiny_gpt2):
    with pytest.raises(GenerationError, match="has no chat template") as err:
        HFGenerator(str(tiny_gpt2), chat=True, max_new_tokens=NEW).generate(["hello"])
    assert "\n" not in str(err.value)
    # messages ask for the chat template whatever chat says
    with pytest.raises(GenerationError, match="has no chat template"):
        HFGenerator(str(tiny_gpt2), max_new_tokens=NEW).generate([[{"role": "user", "content": "hello"}]])

    folder = tmp_path / "gpt2-chat"
    shutil.copytree(tiny_gpt2, folder)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    tok.chat_template = CHAT_TEMPLATE
    tok.save_pretrained(folder)
    chat = HFGenerator(str(folder), chat=True, max_new_tokens=NEW, batch_size=8)
    plain = HFGenerator(str(folder), max_new_tokens=NEW, batch_size=8)
    messages = [[{"role": "system", "content": "be brief"}, {"role": "user", "content": p}] for p in PROMPTS[:3]]
    rendered = [f"<user>{p}\n<assistant>" for p in PROMPTS[:3]]
    assert chat.generate(PROMPTS[:3]) == plain.generate(rendered)  # a string becomes one user message
    assert chat.generate(messages) == plain.generate([f"<system>be brief\n{r}" for r in rendered])
    # the chat template is part of the tokenizer's identity
    assert chat.settings["tokenizer_sha256"] != HFGenerator(str(tiny_gpt2)).settings["tokenizer_sha256"]
    assert chat.settings["weights_sha256"] == HFGenerator(str(tiny_gpt2)).settings["weights_sha256"]


def test_hf_prompt_longer_than_the_context(tiny_gpt2):
    gen = HFGenerator(str(tiny_gpt2), max_new_tokens=NEW, batch_size=8)
    long = " ".join(PROMPTS * 10)
    with pytest.raises(GenerationError, match=r"prompt 2 .* context of 128 tokens") as err:
        gen.generate([PROMPTS[0], long])
    assert "\n" not in str(err.value)
    fits = gen.tokenizer.decode(gen.tokenizer(long)["input_ids"][: 128 - NEW])
    assert len(gen.generate_ids([fits])) == 1  # exactly at the limit still runs
    with pytest.raises(GenerationError, match="max_new_tokens=9"):
        HFGenerator(str(tiny_gpt2), max_new_tokens=NEW + 1).generate([fits])


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"model": "/nonexistent/model"}, "does not exist"),
        ({"temperature": -1}, "temperature must be a number"),
        ({"stop": [""]}, "stop must be a list of non-empty strings"),
        ({"dtype": "float8"}, "dtype must be one of"),
        ({"beams": 2}, "has no setting 'beams'"),
        ({"max_new_tokens": 0}, "max_new_tokens must be an integer >= 1"),
    ],
)
def test_hf_bad_settings_one_sentence(tiny_gpt2, settings, message):
    with pytest.raises(GenerationError, match=message) as err:
        HFGenerator(**{"model": str(tiny_gpt2), **settings})
    assert "\n" not in str(err.value)


def test_hf_seq2seq(tmp_path, bpe_json):
    """A tiny T5 (built here, random weights): the encoder-decoder path equals plain `model.generate`."""
    from lm_support import kernel_free_init
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    tok = PreTrainedTokenizerFast(tokenizer_file=str(bpe_json), eos_token="<|endoftext|>", pad_token="<pad>")
    cfg = T5Config(
        vocab_size=len(tok),
        d_model=32,
        d_kv=16,
        d_ff=64,
        num_layers=1,
        num_heads=2,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        decoder_start_token_id=tok.pad_token_id,
    )
    model = T5ForConditionalGeneration(cfg)
    kernel_free_init(model, 1, std=0.3)  # large enough weights that the outputs vary with the input
    folder = tmp_path / "t5"
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    model.eval()

    gen = HFGenerator(str(folder), max_new_tokens=NEW, batch_size=8)
    want = []
    for p in PROMPTS:
        ids = torch.tensor([tok(p)["input_ids"]])
        with torch.no_grad():
            seq = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW, do_sample=False)
        want.append(tok.decode(seq[0], skip_special_tokens=True))
    got = gen.generate(PROMPTS)
    assert got == want
    assert len(set(got)) > 1 and any(got)
    assert HFGenerator(str(folder), max_new_tokens=NEW, batch_size=1).generate(PROMPTS) == got
