"""An image build whose cached layer another reproduction removed under it is built once more, not failed.

Two reproductions on one engine share Docker's layer cache: one removing its image (``finish``, image cache 0)
can delete the lower layers that another's build matched a moment before, and that build ends with the engine's
"No such image: sha256:..." through no fault of the record (the likely cause of the fleet volunteer's one "could
not run" while other reproductions ran beside it, not caught in the act). That moment cannot be timed from outside
the engine, so the engine's answers
here are a double of ``_Build`` (the thread reading ``docker build``'s stream): each attempt says what the engine
said. Everything else is the runtime's own ``_build``.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from cotk_repro.reproduce import ReproduceError, docker_runtime


class Image:
    id = "sha256:" + "1" * 64
    tags: tuple[str, ...] = ("cotk-repro-reproduce:x",)


class Layer(Image):
    """A step's image: untagged (what a failed build's clean-up removes)."""

    tags = ()


class Images:
    def __init__(self):
        self.got, self.removed = [], []

    def get(self, name):
        self.got.append(name)
        return Layer() if name == "a" * 12 else Image()

    def remove(self, image_id):
        self.removed.append(image_id)


def fake_builds(monkeypatch, errors):
    """``_Build`` answering each attempt with the next of ``errors`` (None: the build succeeded)."""
    attempts = []

    class Build:
        def __init__(self, client, path, tag, base, key):
            self.lines, self.layers, self.containers, self.step_start = [], [], [], 0
            self.error = None
            attempts.append(self)

        def start(self):
            self.error = errors[len(attempts) - 1]
            self.step_start = len(self.lines) + 2  # as the real one marks the step running
            self.lines += ["Step 1/2 : FROM base", " ---> " + "a" * 12, "Step 2/2 : RUN pip install"]
            self.layers.append("a" * 12)
            if self.error:
                self.lines.append(self.error)

        def join(self, timeout=None):
            self.waited = timeout

        def is_alive(self):
            return False

    monkeypatch.setattr(docker_runtime, "_Build", Build)
    return attempts


def build(tmp_path):
    runtime = docker_runtime.DockerRuntime()
    runtime.client = SimpleNamespace(images=Images())
    (tmp_path / "context" / "code").mkdir(parents=True)
    (tmp_path / "logs").mkdir()
    job = SimpleNamespace(
        workdir=tmp_path, lock="", code=tmp_path / "context" / "code", logs=tmp_path / "logs", timeout=60.0
    )
    wheelhouse = SimpleNamespace(materialize=lambda path: path.mkdir())
    return runtime, lambda: runtime._build(job, wheelhouse, "FROM base\n", "base", "cotk-repro-reproduce:x", "k")


VANISHED = "No such image: sha256:" + "b" * 64


def test_a_layer_removed_under_the_build_builds_once_more(tmp_path, monkeypatch):
    attempts = fake_builds(monkeypatch, [VANISHED, None])
    runtime, run = build(tmp_path)
    assert isinstance(run(), Image)
    assert len(attempts) == 2
    # the second attempt waits only for what is left of the one time limit (60 s), never a limit of its own
    assert attempts[0].waited == 60.0 and 0.0 <= attempts[1].waited < 60.0
    assert runtime.client.images.removed == []  # the first attempt's layers stay, for the second to match
    log = (tmp_path / "logs" / "build.log").read_text()
    assert VANISHED in log and "building once more" in log  # the log keeps both attempts
    assert runtime.client.images.got[-1] == "cotk-repro-reproduce:x"


def test_vanishing_twice_is_could_not_run_after_two_attempts(tmp_path, monkeypatch):
    attempts = fake_builds(monkeypatch, [VANISHED, "layer does not exist"])
    _, run = build(tmp_path)
    with pytest.raises(ReproduceError) as err:
        run()
    assert len(attempts) == 2 and err.value.step == "image build"
    assert err.value.message.startswith("building the Docker image failed at Step 2/2")


def test_a_build_that_failed_on_its_own_is_not_built_again(tmp_path, monkeypatch):
    attempts = fake_builds(monkeypatch, ["The command '/bin/sh -c pip install' returned a non-zero code: 1", None])
    _, run = build(tmp_path)
    with pytest.raises(ReproduceError, match="building the Docker image failed"):
        run()
    assert len(attempts) == 1
