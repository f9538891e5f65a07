"""cotk-repro plugin: Texygen parity (oracle LSTM benchmark, NLL-oracle / NLL-test / EmbSim, MLE + six GANs)."""

__version__ = "0.1.0"
