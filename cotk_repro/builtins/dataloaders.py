"""Built-in dataloaders: ``language-generation``, ``single-turn-dialog``, ``multi-turn-dialog``.

Factories import :mod:`cotk_repro.data.loaders` (numpy) when called, so that loading
the plugins stays cheap.
"""

from ..hookspecs import hookimpl


def language_generation(path, **options):
    """Build a LanguageGeneration dataloader for the dataset at `path` (imported lazily)."""
    from ..data.loaders import LanguageGeneration

    return LanguageGeneration(path, **options)


def single_turn_dialog(path, **options):
    """Build a SingleTurnDialog dataloader for the dataset at `path` (imported lazily)."""
    from ..data.loaders import SingleTurnDialog

    return SingleTurnDialog(path, **options)


def multi_turn_dialog(path, **options):
    """Build a MultiTurnDialog dataloader for the dataset at `path` (imported lazily)."""
    from ..data.loaders import MultiTurnDialog

    return MultiTurnDialog(path, **options)


@hookimpl
def register_dataloaders(register):
    """Register the three built-in dataloaders under their task names."""
    register("language-generation", language_generation)
    register("single-turn-dialog", single_turn_dialog)
    register("multi-turn-dialog", multi_turn_dialog)
