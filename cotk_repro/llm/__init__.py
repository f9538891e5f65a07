"""Language models as systems: the prompt protocol, its hash in every metric's, and generation with a cache.

* :mod:`.prompt`: what a generator is asked (:data:`Prompt`: text or chat messages);
* :mod:`.protocol`: the protocol file (:func:`load_protocol`), its rendering and its hash;
* :mod:`.stamp`: :func:`stamp_protocol`, the protocol's hash joined to a metric result's;
* :mod:`.generate`: :func:`generate_outputs`, one output per input, resumable after an interruption.

Nothing here imports torch or transformers: the generators that run models live in plugins.
"""

from __future__ import annotations

from .generate import Generation, generate_outputs
from .prompt import Prompt
from .protocol import Protocol, ProtocolError, load_protocol
from .stamp import stamp_protocol

__all__ = [
    "Generation",
    "Prompt",
    "Protocol",
    "ProtocolError",
    "generate_outputs",
    "load_protocol",
    "stamp_protocol",
]
