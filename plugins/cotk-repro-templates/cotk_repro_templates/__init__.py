"""cotk-repro-templates: the CoTK paper's benchmark models as `cotk-repro init` templates."""

__version__ = "0.1.0"
