"""Generators `hf` and `openai`: against plain `model.generate`, across batch sizes, and against a real
OpenAI-compatible server (`transformers serve`) on the same tiny model."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

# fixtures are imported by name (no conftest.py: see lm_support)
from lm_support import (  # noqa: F401
    OPENSUB,
    _isolated_dirs,
    bpe_json,
    kernel_free_init,
    make_gpt2,
    tiny_gpt2,
)

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch==2.13.0)")
pytest.importorskip(
    "cotk_repro_lm", reason="the cotk-repro-lm plugin is not installed (pip install -e plugins/cotk-repro-lm)"
)

from cotk_repro_lm.generation import GenerationError  # noqa: E402
from cotk_repro_lm.generation.endpoint import OpenAIGenerator, public_url  # noqa: E402
from cotk_repro_lm.generation.hf import HFGenerator  # noqa: E402

NEW = 8
#: eight prompts of different lengths (1 to ~20 tokens), so a batch of 8 pads most of them
PROMPTS = (OPENSUB / "opensub_pair_test.post").read_text(encoding="utf-8").splitlines()[:7] + ["so"]
CHAT_TEMPLATE = (
    "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)


@pytest.fixture(scope="session")
def varied_gpt2(tmp_path_factory, bpe_json) -> Path:
    """The tiny GPT-2 with larger random weights (std 0.1): its greedy outputs differ from prompt to prompt and
    token to token (the fixture's std 0.02 model says " . . . ." to most prompts), so equal outputs mean something.
    Its tokenizer has a small chat template."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = make_gpt2(tmp_path_factory.mktemp("models") / "gpt2-varied", seed=0, tokenizer_json=bpe_json)
    model = AutoModelForCausalLM.from_pretrained(folder)
    kernel_free_init(model, 7, std=0.1)
    model.save_pretrained(folder, safe_serialization=True)
    tok = AutoTokenizer.from_pretrained(folder)
    tok.chat_template = CHAT_TEMPLATE
    tok.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def gen1(varied_gpt2):
    return HFGenerator(str(varied_gpt2), max_new_tokens=NEW, batch_size=1)


@pytest.fixture(scope="module")
def reference(varied_gpt2):
    """Each prompt alone through plain `model.generate` (no padding at all), greedy: the new token ids up to the
    end of text."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(varied_gpt2)
    model = AutoModelForCausalLM.from_pretrained(varied_gpt2).eval()
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


def test_hf_greedy_equals_plain_generate_at_batch_1_and_8(varied_gpt2, gen1, reference):
    gen8 = HFGenerator(str(varied_gpt2), max_new_tokens=NEW, batch_size=8)
    ids1, ids8 = gen1.generate_ids(PROMPTS), gen8.generate_ids(PROMPTS)
    assert ids1 == reference
    assert ids8 == reference  # left padding: token for token the same as each prompt alone
    assert any(len(r) == NEW for r in reference)  # the comparison covers full-length outputs
    texts = gen8.generate(PROMPTS)
    assert texts == gen1.tokenizer.batch_decode(reference, skip_special_tokens=True)
    # greedy: the batch size is not part of the system, the weights and tokenizer are
    assert gen8.settings == gen1.settings
    # beam search pads the same way
    beams = [HFGenerator(str(varied_gpt2), max_new_tokens=NEW, num_beams=3, batch_size=b) for b in (1, 8)]
    assert beams[0].generate_ids(PROMPTS) == beams[1].generate_ids(PROMPTS) != ids1
    # transformers' repetition penalty also sees the pad tokens: there the batch size joins the settings
    assert HFGenerator(str(varied_gpt2), repetition_penalty=1.2, batch_size=8).settings["batch_size"] == 8
    assert {"weights_sha256", "tokenizer_sha256", "max_new_tokens", "stop", "seed"} <= set(gen1.settings)
    assert len(set(texts)) == len(texts)  # eight different outputs
    assert gen1.settings["model"] == varied_gpt2.name and str(varied_gpt2.parent) not in repr(gen1.settings)
    assert gen1.pinned is True and gen1.accepts_prompts is True


def test_hf_sampling_is_seeded(varied_gpt2):
    a = HFGenerator(str(varied_gpt2), max_new_tokens=NEW, do_sample=True, temperature=1.5, seed=3, batch_size=4)
    again = a.generate(PROMPTS)
    assert a.generate(PROMPTS) == again  # a rerun draws the same outputs
    b = HFGenerator(str(varied_gpt2), max_new_tokens=NEW, do_sample=True, temperature=1.5, seed=4, batch_size=4)
    assert b.generate(PROMPTS) != again
    assert a.settings["batch_size"] == 4 and a.settings["seed"] == 3


def test_hf_stop_strings_cut_and_stop_early(varied_gpt2, gen1, reference):
    full = gen1.tokenizer.batch_decode(reference, skip_special_tokens=True)
    # a stop string taken from inside one greedy output: that output is cut right before it
    i = next(k for k, t in enumerate(full) if len(t.strip()) >= 4)
    text = full[i]
    stop = text[len(text) // 2 : len(text) // 2 + 2]
    gen = HFGenerator(str(varied_gpt2), max_new_tokens=NEW, stop=[stop], batch_size=8)
    got = gen.generate(PROMPTS)
    for want, out in zip(full, got, strict=True):
        assert out == want[: want.find(stop)] if stop in want else out == want
    assert got[i] == text[: text.find(stop)] and len(got[i]) < len(text)
    # and generation ended early (fewer tokens than without the stop string)
    ids = gen.generate_ids([PROMPTS[i]])[0]
    assert len(ids) < len(reference[i])
    assert gen.settings["stop"] == [stop] and gen.settings != gen1.settings


def test_hf_chat_template(varied_gpt2, tiny_gpt2):
    with pytest.raises(GenerationError, match="has no chat template") as err:
        HFGenerator(str(tiny_gpt2), chat=True, max_new_tokens=NEW).generate(["hello"])
    assert "\n" not in str(err.value)
    # messages ask for the chat template whatever chat says
    with pytest.raises(GenerationError, match="has no chat template"):
        HFGenerator(str(tiny_gpt2), max_new_tokens=NEW).generate([[{"role": "user", "content": "hello"}]])

    chat = HFGenerator(str(varied_gpt2), chat=True, max_new_tokens=NEW, batch_size=8)
    plain = HFGenerator(str(varied_gpt2), max_new_tokens=NEW, batch_size=8)
    messages = [[{"role": "system", "content": "be brief"}, {"role": "user", "content": p}] for p in PROMPTS[:3]]
    rendered = [f"<user>{p}\n<assistant>" for p in PROMPTS[:3]]
    assert chat.generate(PROMPTS[:3]) == plain.generate(rendered)  # a string becomes one user message
    assert chat.generate(messages) == plain.generate([f"<system>be brief\n{r}" for r in rendered])
    # the chat template is part of the tokenizer's identity (the two folders share every other tokenizer file)
    assert chat.settings["tokenizer_sha256"] != HFGenerator(str(tiny_gpt2)).settings["tokenizer_sha256"]


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


def test_hf_hub_name_from_the_cache(tmp_path, monkeypatch, varied_gpt2, gen1):
    """``hf:NAME`` resolves offline from the hub cache; the system is named by NAME and the snapshot's revision."""
    import huggingface_hub.constants

    revision = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--cotk--tiny-gpt2"
    shutil.copytree(varied_gpt2, repo / "snapshots" / revision)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    gen = HFGenerator("hf:cotk/tiny-gpt2", max_new_tokens=NEW, batch_size=8)
    assert gen.settings["model"] == "hf:cotk/tiny-gpt2" and gen.settings["revision"] == revision
    assert str(tmp_path) not in json.dumps(gen.settings)
    # the same files: the same digests and outputs as the folder
    for key in ("weights_sha256", "tokenizer_sha256"):
        assert gen.settings[key] == gen1.settings[key]
    assert gen.generate(PROMPTS) == gen1.generate(PROMPTS)
    with pytest.raises(GenerationError, match=r"cannot get the model hf:cotk/absent") as err:
        HFGenerator("hf:cotk/absent")
    assert "\n" not in str(err.value)


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


# ----- openai: a real OpenAI-compatible server -----


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def served(varied_gpt2):
    """`transformers serve` on the tiny model (one server for the whole session): its base URL and model id."""
    pytest.importorskip(
        "fastapi", reason="transformers serve needs its serving extra (pip install transformers[serving])"
    )
    pytest.importorskip(
        "uvicorn", reason="transformers serve needs its serving extra (pip install transformers[serving])"
    )
    exe = shutil.which("transformers", path=os.path.dirname(os.sys.executable) + os.pathsep + os.environ["PATH"])
    if exe is None:
        pytest.skip("the transformers command is not installed")
    port = _free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "TRANSFORMERS_VERBOSITY": "error"}
    args = [exe, "serve", str(varied_gpt2), "--host", "127.0.0.1", "--port", str(port), "--device", "cpu"]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(f"transformers serve exited with {proc.returncode}: {proc.stderr.read()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("transformers serve did not answer /health within 120 s")
            time.sleep(0.3)
        yield f"{base}/v1", str(varied_gpt2)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("settings", [{}, {"chat": True}, {"stop": ["a", " wh"]}], ids=["completions", "chat", "stop"])
def test_openai_against_transformers_serve_equals_hf(served, varied_gpt2, settings):
    """The "Done when" point: the same tiny model, greedy, through the server and locally: the same outputs."""
    base_url, model_id = served
    remote = OpenAIGenerator(base_url, model_id, max_new_tokens=NEW, concurrency=4, **settings)
    local = HFGenerator(str(varied_gpt2), max_new_tokens=NEW, batch_size=8, **settings)
    got = remote.generate(PROMPTS)
    assert got == local.generate(PROMPTS)
    assert len(set(got)) == len(got)
    assert remote.pinned is False and local.pinned is True
    assert remote.settings["base_url"] == base_url and remote.settings["model"] == model_id


def test_openai_http_4xx_is_one_sentence(served):
    base_url, _ = served
    gen = OpenAIGenerator(base_url, "another-model", max_new_tokens=NEW, max_retries=0)
    with pytest.raises(GenerationError, match=r"answered prompt 1 with HTTP 400 .*pinned to") as err:
        gen.generate(["hello"])
    assert "\n" not in str(err.value)


class _FlakyServer:
    """A TEST DOUBLE for a flaky OpenAI-compatible server (a real one cannot be made to fail on cue): each request
    takes the next status of ``script`` (then 200), with ``retry-after-ms`` kept short; a 200 answers the prompt
    upper-cased after ``delay(prompt)`` seconds. It records every request's path, body and Authorization header."""

    def __init__(self, script=(), delay=lambda prompt: 0.0):
        # a prompt starting with "bad" is refused with HTTP 400
        self.script = list(script)
        self.requests: list[tuple[str, dict, str]] = []
        self.lock = threading.Lock()
        double = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with double.lock:
                    double.requests.append((self.path, body, self.headers.get("Authorization", "")))
                    status = double.script.pop(0) if double.script else 200
                if str(body.get("prompt", "")).startswith("bad"):
                    status = 400
                if status != 200:
                    payload = json.dumps({"error": {"message": f"scripted {status}", "type": "test"}}).encode()
                    self.send_response(status)
                    self.send_header("retry-after-ms", "5")
                else:
                    if "messages" in body:
                        prompt = body["messages"][-1]["content"]
                        choice = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant"}}
                        choice["message"]["content"] = prompt.upper()
                        obj = "chat.completion"
                    else:
                        prompt = body["prompt"]
                        choice = {"index": 0, "finish_reason": "stop", "text": prompt.upper()}
                        obj = "text_completion"
                    time.sleep(delay(prompt))
                    answer = {"id": "x", "object": obj, "created": 0, "model": body["model"], "choices": [choice]}
                    payload = json.dumps(answer).encode()
                    self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def flaky():
    servers = []

    def make(*args, **kwargs):
        servers.append(_FlakyServer(*args, **kwargs))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


def test_openai_retries_429_and_5xx(flaky, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-canary-0451")
    server = flaky([429, 503])
    gen = OpenAIGenerator(server.url, "m", max_new_tokens=4, max_retries=3, concurrency=1, stop=["X"])
    assert gen.generate(["a xb"]) == ["A "]  # after two refusals; cut at the stop string
    assert len(server.requests) == 3
    path, body, auth = server.requests[-1]
    assert path == "/v1/completions" and body["max_tokens"] == 4 and body["temperature"] == 0 and body["stop"] == ["X"]
    assert auth == "Bearer sk-canary-0451"  # the key is used, and never recorded
    assert "canary" not in json.dumps(gen.settings)

    # chat messages go to chat completions
    assert gen.generate([[{"role": "user", "content": "hi"}]]) == ["HI"]
    assert server.requests[-1][0] == "/v1/chat/completions"

    # a server that keeps failing: one sentence after max_retries
    server = flaky([500] * 10)
    gen = OpenAIGenerator(server.url, "m", max_new_tokens=4, max_retries=2)
    with pytest.raises(GenerationError, match=r"HTTP 500 after 2 retries") as err:
        gen.generate(["a", "b"])
    assert "\n" not in str(err.value)


def test_openai_concurrency_keeps_input_order(flaky):
    prompts = [f"p{i}" for i in range(8)]
    # later prompts answer first: with 8 threads the answers come back in reverse order
    server = flaky(delay=lambda prompt: 0.05 * (8 - int(prompt[1:])))
    gen = OpenAIGenerator(server.url, "m", concurrency=8, max_new_tokens=4)
    assert gen.generate(prompts) == [p.upper() for p in prompts]
    assert gen.batch_size == 32  # a modest batch: an interrupted run loses at most one
    # a batch gives every output or an error, never a part
    with pytest.raises(GenerationError, match=r"answered prompt 3 with HTTP 400 \(scripted 400\)$"):
        gen.generate(["p1", "p2", "bad p3", "p4"])


def test_openai_unreachable_and_bad_settings():
    port = _free_port()  # nothing listens there
    gen = OpenAIGenerator(f"http://127.0.0.1:{port}/v1", "m", max_retries=1, timeout=5)
    with pytest.raises(
        GenerationError, match=rf"the server at http://127.0.0.1:{port}/v1 is unreachable after 1 retry \("
    ) as err:
        gen.generate(["hello"])
    assert "\n" not in str(err.value)

    secret = OpenAIGenerator("https://user:hunter2@api.example.org:8443/v1/?key=hunter2", "m")
    assert secret.settings["base_url"] == "https://api.example.org:8443/v1" == public_url(secret.base_url)
    assert "hunter2" not in json.dumps(secret.settings)
    for settings, message in [
        ({"base_url": "localhost:8000"}, "needs base_url"),
        ({"model": ""}, "needs model"),
        ({"num_beams": 2}, "cannot set num_beams"),
        ({"concurrency": 0}, "concurrency must be an integer >= 1"),
    ]:
        with pytest.raises(GenerationError, match=message):
            OpenAIGenerator(**{"base_url": "http://localhost:8000/v1", "model": "m", **settings})
