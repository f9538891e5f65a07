"""Language models as systems: the prompt protocol, its hash in every metric's, and generation with a cache.

* :mod:`.prompt`: what a generator is asked (:data:`Prompt`: text or chat messages);
* :mod:`.protocol`: the protocol file (:func:`load_protocol`), its rendering and its hash;
* :mod:`.stamp`: :func:`stamp_protocol`, the protocol's hash joined to a metric result's;
* :mod:`.generate`: :func:`generate_outputs`, one output per input through the cache of :mod:`cotk_repro.generation`,
  resumable after an interruption; ``FILE`` and its sidecar ``FILE.json``, and the protocol read back from it.

Nothing here imports torch or transformers: the generators that run models live in plugins.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .prompt import Prompt
from .protocol import Protocol, ProtocolError, load_protocol
from .stamp import stamp_protocol

if TYPE_CHECKING:
    from .generate import Generation, generate_outputs


def __getattr__(name: str) -> Any:  # the generation library (and the plugin registry) loads on first use only
    if name in ("Generation", "generate_outputs"):
        from . import generate

        return getattr(generate, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Generation",
    "Prompt",
    "Protocol",
    "ProtocolError",
    "generate_outputs",
    "load_protocol",
    "stamp_protocol",
]
