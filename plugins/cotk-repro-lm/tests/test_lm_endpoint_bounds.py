"""Issue 45, item 3: a server's answer is bounded in size and in time (cotk_repro_lm/generation/bounded_http.py).

The attacks run against a real loopback HTTP server started here (``http.server`` on port 0), which answers by the
model id it is asked for: a 200 MB completion (declared, or streamed without a length), a body dripped a few bytes
at a time, headers dripped the same way, a 200 MB error body. The user path runs as a real ``cotk-repro generate``
subprocess, whose peak RSS is measured by a parent process of its own (its ``RUSAGE_CHILDREN``).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from lm_support import REPO_ROOT, _isolated_dirs  # noqa: F401  (fixture)

pytest.importorskip("openai", reason="the openai client is not installed (pip install openai)")

from cotk_repro.metrics import MetricError, get_metric
from cotk_repro_lm.generation import GenerationError
from cotk_repro_lm.generation.bounded_http import BYTES_PER_TOKEN, answer_limit
from cotk_repro_lm.generation.endpoint import OpenAIGenerator

HUGE = 200 * 1024 * 1024
CHUNK = b"x" * (1 << 20)
#: seconds between two dripped bytes: far below the request's timeout, so a per-read timeout would never fire
DRIP = 0.25


class HostileServer:
    """A real HTTP server on the loopback; the model id of the request picks the attack."""

    def __init__(self) -> None:
        self.bytes_sent: dict[str, int] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _count(self, model: str, n: int) -> None:
                server.bytes_sent[model] = server.bytes_sent.get(model, 0) + n

            def _huge(self, model: str, status: int, declared: bool) -> None:
                head = b'{"id":"x","object":"text_completion","created":0,"model":"m","choices":[{"index":0,"text":"'
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                if declared:
                    self.send_header("Content-Length", str(len(head) + HUGE + 3))
                else:
                    self.send_header("Connection", "close")  # the body ends when the connection does
                self.end_headers()
                try:
                    self.wfile.write(head)
                    for _ in range(HUGE // len(CHUNK)):
                        self.wfile.write(CHUNK)
                        self._count(model, len(CHUNK))
                    self.wfile.write(b'"}]}')
                except OSError:  # the client hung up: the point of the bound
                    pass
                self.close_connection = True

            def _drip(self, model: str, data: bytes, headers_done: bool) -> None:
                try:
                    for i in range(len(data)):
                        self.wfile.write(data[i : i + 1])
                        self.wfile.flush()
                        self._count(model, 1)
                        time.sleep(DRIP)
                except OSError:
                    pass
                self.close_connection = True

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                model = body["model"]
                answer = json.dumps(
                    {
                        "id": "x",
                        "object": "text_completion",
                        "created": 0,
                        "model": model,
                        "choices": [{"index": 0, "finish_reason": "stop", "text": " fine"}],
                    }
                ).encode()
                if model == "huge-declared":
                    self._huge(model, 200, declared=True)
                elif model == "huge-streamed":
                    self._huge(model, 200, declared=False)
                elif model == "huge-error":
                    self._huge(model, 400, declared=True)
                elif model == "drip-body":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(answer)))
                    self.end_headers()
                    self.wfile.flush()
                    self._drip(model, answer, headers_done=True)
                elif model == "gzip":  # a small body that inflates to 20 MB, sent although asked for none
                    packed = gzip.compress(b'{"choices":[{"text":"' + b"x" * (HUGE // 10) + b'"}]}', compresslevel=1)
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Encoding", "gzip")
                    self.send_header("Content-Length", str(len(packed)))
                    self.end_headers()
                    self.wfile.write(packed)
                elif model == "drip-headers":
                    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Slow: " + b"y" * 200
                    self._drip(model, head, headers_done=False)
                else:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(answer)))
                    self.end_headers()
                    self.wfile.write(answer)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def hostile():
    server = HostileServer()
    yield server
    server.close()


def _gen(server: HostileServer, model: str, **settings) -> OpenAIGenerator:
    return OpenAIGenerator(server.url, model, **{"max_new_tokens": 8, "max_retries": 0, "timeout": 5, **settings})


def test_an_answer_past_its_size_bound_is_abandoned_one_sentence(hostile):
    assert _gen(hostile, "honest").generate(["hello"]) == [" fine"]  # the client works against this server
    limit = answer_limit(8)
    assert limit == 64 * 1024 + 8 * BYTES_PER_TOKEN
    for model in ("huge-declared", "huge-streamed"):
        with pytest.raises(GenerationError) as err:
            _gen(hostile, model, max_retries=2).generate(["hello"])
        message = str(err.value)
        assert "\n" not in message and f"at most {limit} bytes" in message and "max_new_tokens=8" in message, message
    # streamed, the client stopped reading soon after the bound (the socket's buffers hold a few MB at most), and
    # it did not ask again: an oversized answer is not retried
    time.sleep(0.2)
    assert hostile.bytes_sent.get("huge-streamed", 0) < 32 * 1024 * 1024
    # a compressed answer: its size on the wire bounds nothing, so it is refused
    with pytest.raises(
        GenerationError, match=r"answered compressed \(gzip\) although asked for an uncompressed"
    ) as err:
        _gen(hostile, "gzip").generate(["hello"])
    assert "\n" not in str(err.value)
    # an endpoint judge is the same generator: bounded the same way
    judge = get_metric("llm-judge", judge=f"openai:{hostile.url}#huge-streamed", max_new_tokens=8, max_retries=0)
    with pytest.raises(MetricError, match=f"at most {limit} bytes"):
        judge.compute(["an output"], queries=["an input"])


def test_an_error_body_is_read_to_a_bound(hostile):
    t0 = time.monotonic()
    with pytest.raises(GenerationError, match=r"answered prompt 1 with HTTP 400 \(") as err:
        _gen(hostile, "huge-error").generate(["hello"])
    assert "\n" not in str(err.value) and len(str(err.value)) < 400
    assert time.monotonic() - t0 < 10
    time.sleep(0.2)
    assert hostile.bytes_sent["huge-error"] < 32 * 1024 * 1024  # not read to its end


@pytest.mark.parametrize("model", ["drip-body", "drip-headers"])
def test_a_dripping_server_is_cut_off_at_the_deadline(hostile, model):
    """Each dripped byte comes well within the timeout, so only a deadline on the whole request ends it."""
    t0 = time.monotonic()
    with pytest.raises(GenerationError, match=r"did not answer within timeout=1 s after 0 retries") as err:
        _gen(hostile, model, timeout=1.0).generate(["hello"])
    took = time.monotonic() - t0
    assert "\n" not in str(err.value)
    assert 0.9 < took < 3.0, took  # without the deadline: len(answer) * DRIP, tens of seconds
    assert hostile.bytes_sent[model] >= 2  # it did drip, and more than one read's timeout passed


def test_generate_refuses_a_200_mb_answer_in_bounded_memory(hostile, tmp_path):
    """The user path: `cotk-repro generate` against the 200 MB answer, in a real subprocess. One sentence, exit 2,
    no output file, and a peak RSS under 600 MB (taken by a parent process whose only child is the CLI)."""
    inputs, out = tmp_path / "inputs.txt", tmp_path / "out.txt"
    inputs.write_text("hello\n", encoding="utf-8")
    cli = [sys.executable, "-m", "cotk_repro", "generate", "--generator", "openai"]
    cli += ["-g", f"openai.base_url={hostile.url}", "-g", "openai.model=huge-streamed"]
    cli += ["-g", "openai.max_new_tokens=8", "--inputs", str(inputs), "--out", str(out)]
    measure = (
        "import json, resource, subprocess, sys\n"
        "p = subprocess.run(json.loads(sys.argv[1]), capture_output=True, text=True)\n"
        "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "print(json.dumps([p.returncode, p.stderr, rss]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run(
        [sys.executable, "-c", measure, json.dumps(cli)], capture_output=True, text=True, env=env, timeout=120
    )
    code, stderr, peak_kib = json.loads(proc.stdout)
    assert code == 2, stderr
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    assert "at most" in lines[0] and "max_new_tokens=8" in lines[0], lines[0]
    assert peak_kib < 600 * 1024, f"peak RSS {peak_kib / 1024:.0f} MB"
    print(f"peak RSS of cotk-repro generate: {peak_kib / 1024:.0f} MB")
    assert not out.exists() and not (tmp_path / "out.txt.json").exists()
