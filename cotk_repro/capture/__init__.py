"""Capturing the code (git) and the environment (packages, platform) of a run."""
