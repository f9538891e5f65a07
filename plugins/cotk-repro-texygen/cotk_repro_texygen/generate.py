"""The ``texygen`` generator for ``cotk-repro compare``: trains one model with a preset (once per process) and
returns one sampled sentence per input line (the inputs only count the samples; synthetic mode writes token
ids, real mode words). Settings: ``model``, ``preset`` and any protocol setting; all go into the cache key.
``result()`` hands compare the training run's own result (each metric per epoch as ``NAME@epoch-N``, and
final), from which it draws the curves."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from . import __version__

if TYPE_CHECKING:  # protocol imports the models: only when a run starts
    from .protocol import Run


class TexygenGenerator:
    name = "texygen"
    version = __version__
    batch_size = None  # every input in one call: the samples are drawn together

    def __init__(self, model: str = "mle", preset: str = "tiny", sample_seed: int = 0, **overrides: Any):
        from .protocol import check_model, settings_for

        self.settings = {"model": model, "preset": preset, "sample_seed": sample_seed, **overrides}
        self._s = settings_for(preset, overrides)
        check_model(model, self._s)
        self._model = model
        self._run: Run | None = None

    def generate(self, inputs: list[str]) -> list[str]:
        from .protocol import run

        if self._run is None:
            self._run = run(
                self._model,
                self.settings["preset"],
                out_dir=None,
                log=lambda line: None,
                **{k: v for k, v in self.settings.items() if k not in ("model", "preset", "sample_seed")},
            )
        r = self._run
        samples = r.model.sample(len(inputs), torch.Generator().manual_seed(self.settings["sample_seed"]))
        if r.real is not None:
            return r.real.decode(samples)
        return [" ".join(map(str, row)) for row in samples.tolist()]

    def result(self) -> dict[str, Any]:
        """The training run's result dict (after :meth:`generate`): the curve points and the final values."""
        if self._run is None:
            raise RuntimeError("result() before generate(): nothing was trained")
        return dict(self._run.entries)
