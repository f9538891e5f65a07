"""The smallest cotk-repro plugin: registers ``toy-metric`` and ``toy-tokenizer`` through the pluggy hooks."""

from cotk_repro.hookspecs import hookimpl


class ToyMetric:
    """A placeholder metric: a name and a version are all the registry needs to list it."""

    name = "toy-metric"
    version = "1"


@hookimpl
def register_metrics(register):
    """Register the toy metric."""
    register("toy-metric", ToyMetric)


@hookimpl
def register_tokenizers(register):
    """Register a whitespace tokenizer under a toy name."""
    register("toy-tokenizer", str.split)
