"""Helpers for the signing tests: real SSH keys made by ssh-keygen, a real ssh-agent."""

from __future__ import annotations

import os
import signal
import subprocess
from contextlib import contextmanager
from pathlib import Path


def make_key(
    folder: Path, name: str = "id_ed25519", key_type: str = "ed25519", passphrase: str = "", comment: str | None = None
) -> Path:
    """A new key pair ``folder/name`` (+ ``.pub``) made by ssh-keygen; returns the private key's path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    args = ["ssh-keygen", "-q", "-t", key_type, "-N", passphrase, "-f", str(path), "-C", comment or name]
    if key_type == "rsa":
        args[4:4] = ["-b", "2048"]
    subprocess.run(args, check=True, capture_output=True)
    return path


def fingerprint_of(pub: Path) -> str:
    """The fingerprint as ``ssh-keygen -l`` prints it (the independent reference)."""
    return subprocess.run(["ssh-keygen", "-lf", str(pub)], check=True, capture_output=True, text=True).stdout.split()[1]


def key_env(key: Path | None, home: Path) -> dict[str, str]:
    """Environment for a CLI run that signs with ``key`` (None: a home without any key)."""
    env = {"HOME": str(home), "COTK_REPRO_SIGNING_KEY": ""}
    if key is not None:
        env["COTK_REPRO_SIGNING_KEY"] = str(key)
    return env


@contextmanager
def ssh_agent(tmp: Path):
    """A real ssh-agent for the test; yields its environment (SSH_AUTH_SOCK, SSH_AGENT_PID)."""
    sock = tmp / "agent.sock"
    proc = subprocess.run(["ssh-agent", "-s", "-a", str(sock)], check=True, capture_output=True, text=True)
    env = {}
    for part in proc.stdout.replace("\n", ";").split(";"):
        if "=" in part and part.strip().startswith("SSH_"):
            k, v = part.strip().split("=", 1)
            env[k] = v
    try:
        yield env
    finally:
        pid = env.get("SSH_AGENT_PID")
        if pid:
            os.kill(int(pid), signal.SIGTERM)


def agent_add(key: Path, passphrase: str, agent_env: dict[str, str], tmp: Path) -> None:
    """``ssh-add`` a passphrase-protected key, the passphrase given through SSH_ASKPASS (no terminal)."""
    askpass = tmp / "askpass.sh"
    askpass.write_text(f"#!/bin/sh\necho '{passphrase}'\n")
    askpass.chmod(0o700)
    env = {**os.environ, **agent_env, "SSH_ASKPASS": str(askpass), "SSH_ASKPASS_REQUIRE": "force", "DISPLAY": ":0"}
    subprocess.run(["ssh-add", str(key)], check=True, env=env, capture_output=True, stdin=subprocess.DEVNULL)
