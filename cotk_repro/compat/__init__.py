"""Drop-in adapters for other toolkits' metric APIs, over this library's native metrics.

``cotk_repro.compat.cotk``: CoTK 0.1.0's metric classes (same names, arguments, keys and values).
"""
