"""The in-process SSHSIG verifier (cotk_repro.core.sshsig, with `cryptography`) agrees with
`ssh-keygen -Y verify` on good signatures and on tampered ones, for ed25519, RSA and ECDSA keys."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import pytest
from signing_support import make_key

from cotk_repro.core import sshsig
from cotk_repro.core.signing import (
    ARMOR_BEGIN,
    ARMOR_END,
    SigningError,
    parse_public_key,
    parse_signature,
    verify_bytes,
)

NS = "cotk-repro-record"
MESSAGE = b'{"code":{"commit":"abc"},"results":{"bleu":{"value":0.25}}}'


def string(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def ssh_sign(key: Path, data: bytes, namespace: str = NS) -> str:
    """A signature made by OpenSSH's own tool (the independent reference)."""
    proc = subprocess.run(
        ["ssh-keygen", "-Y", "sign", "-f", str(key), "-n", namespace], input=data, capture_output=True, check=True
    )
    return proc.stdout.decode()


def ssh_verifies(tmp: Path, pub: Path, data: bytes, sig_text: str, namespace: str = NS) -> bool:
    signers = tmp / "allowed_signers"
    signers.write_text(f"alice {pub.read_text().strip()}\n")
    sig = tmp / "check.sig"
    sig.write_text(sig_text)
    return (
        subprocess.run(
            ["ssh-keygen", "-Y", "verify", "-f", str(signers), "-I", "alice", "-n", namespace, "-s", str(sig)],
            input=data,
            capture_output=True,
        ).returncode
        == 0
    )


def ours_verifies(pub: Path, data: bytes, sig_text: str, namespace: str = NS) -> bool:
    key = parse_public_key(pub.read_text())
    try:
        verify_bytes(data, sig_text, namespace, [("alice", key)])
        return True
    except SigningError:
        return False


def blob_of(sig_text: str) -> bytes:
    body = sig_text.strip()[len(ARMOR_BEGIN) : -len(ARMOR_END)]
    return base64.b64decode("".join(body.split()))


def armor(blob: bytes) -> str:
    b64 = base64.b64encode(blob).decode()
    return ARMOR_BEGIN + "\n" + "\n".join(b64[i : i + 70] for i in range(0, len(b64), 70)) + "\n" + ARMOR_END + "\n"


def rebuild(sig_text: str, **fields: bytes) -> str:
    """The same signature with some of its SSHSIG fields replaced."""
    parsed = sshsig.parse(blob_of(sig_text))
    parts = {
        "public_key": parsed.public_key,
        "namespace": parsed.namespace,
        "reserved": parsed.reserved,
        "hash_alg": parsed.hash_alg,
        "signature": parsed.signature,
        **fields,
    }
    return armor(
        b"SSHSIG"
        + (1).to_bytes(4, "big")
        + b"".join(string(parts[k]) for k in ("public_key", "namespace", "reserved", "hash_alg", "signature"))
    )


def flip(sig_text: str, offset_from_end: int) -> str:
    blob = bytearray(blob_of(sig_text))
    blob[-offset_from_end] ^= 0x01
    return armor(bytes(blob))


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sshsig-keys")
    return {t: make_key(folder, f"id_{t}", key_type=t) for t in ("ed25519", "rsa", "ecdsa")}


@pytest.mark.parametrize("key_type", ["ed25519", "rsa", "ecdsa"])
def test_in_process_verifier_agrees_with_ssh_keygen(keys, tmp_path, key_type):
    key = keys[key_type]
    pub = key.with_suffix(".pub")
    other = keys["ed25519" if key_type != "ed25519" else "rsa"]
    good = ssh_sign(key, MESSAGE)
    parsed = sshsig.parse(blob_of(good))
    sig_type_len = int.from_bytes(parsed.signature[:4], "big")
    cases = {
        "good": (MESSAGE, good, NS, True),
        "other bytes": (MESSAGE + b" ", good, NS, False),
        "one byte changed": (MESSAGE.replace(b"0.25", b"0.26"), good, NS, False),
        "other namespace": (MESSAGE, good, "cotk-repro-reproduction", False),
        "namespace rewritten in the blob": (MESSAGE, rebuild(good, namespace=b"git"), "git", False),
        "signature bit flipped": (MESSAGE, flip(good, 5), NS, False),
        "hash algorithm rewritten": (MESSAGE, rebuild(good, hash_alg=b"sha256"), NS, False),
        "another key's signature": (
            MESSAGE,
            rebuild(ssh_sign(other, MESSAGE), public_key=parsed.public_key),
            NS,
            False,
        ),
        "signature of other bytes": (
            MESSAGE,
            rebuild(good, signature=sshsig.parse(blob_of(ssh_sign(key, MESSAGE + b"!"))).signature),
            NS,
            False,
        ),
        "trailing data in the signature": (MESSAGE, rebuild(good, signature=parsed.signature + b"\0"), NS, False),
        # OpenSSH signs the reserved field empty and ignores what the blob carries there
        "reserved field filled in": (MESSAGE, rebuild(good, reserved=b"x"), NS, True),
    }
    if key_type == "rsa":  # relabelled as SHA-1 "ssh-rsa", which SSHSIG refuses
        sig_blob = parsed.signature[4 + sig_type_len :]
        cases["rsa signature relabelled ssh-rsa"] = (
            MESSAGE,
            rebuild(good, signature=string(b"ssh-rsa") + sig_blob),
            NS,
            False,
        )
        cases["rsa-sha2-256 signature"] = (
            MESSAGE,
            rebuild(good, signature=string(b"rsa-sha2-256") + sig_blob),
            NS,
            False,
        )
    for name, (data, sig, namespace, expected) in cases.items():
        theirs = ssh_verifies(tmp_path, pub, data, sig, namespace)
        ours = ours_verifies(pub, data, sig, namespace)
        assert (theirs, ours) == (expected, expected), name


def test_a_key_type_nobody_knows_is_refused_with_its_name(keys):
    good = ssh_sign(keys["ed25519"], MESSAGE)
    forged = rebuild(good, public_key=string(b"ssh-dss") + string(b"\1" * 20))
    with pytest.raises(SigningError, match="unknown key type 'ssh-dss'"):
        parse_signature(forged)


def test_verifying_starts_no_process(keys, monkeypatch):
    """The reason for the module: the dashboard verifies an upload without a ssh-keygen process."""
    good = ssh_sign(keys["ed25519"], MESSAGE)
    pub = keys["ed25519"].with_suffix(".pub")

    def no_process(*_a, **_k):
        raise AssertionError("a process was started")

    monkeypatch.setattr(subprocess, "run", no_process)
    monkeypatch.setattr(subprocess, "Popen", no_process)
    assert ours_verifies(pub, MESSAGE, good)
    assert not ours_verifies(pub, MESSAGE + b"x", good)
