"""SSH signatures of records and reproductions (SSHSIG, the format of ``git`` with ``gpg.format=ssh``).

Signing is done by ``ssh-keygen -Y sign`` in a subprocess, exactly as git does (so keys in
ssh-agent and passphrase-protected keys work). Verifying is done in-process by :mod:`.sshsig`
(the ``cryptography`` library's primitives; ~0.1 ms instead of a ~45 ms ``ssh-keygen -Y verify``
process), except for security-key types, which ``ssh-keygen`` checks. This module

* finds the key that signs (git's ``user.signingkey``, else ``~/.ssh/id_ed25519``);
* says which bytes are signed: the canonical JSON the record id is computed from
  (:func:`record_bytes`) and the canonical JSON of a reproduction without its signature;
* reads the public key out of an armored signature (to name the key, and so the dashboard
  can look its owner up by fingerprint) and parses ``authorized_keys``-style public keys.

Namespaces: ``cotk-repro-record`` and ``cotk-repro-reproduction``. On the records ref the
signature is ``records/<hex>/record.sig`` beside ``record.json``.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import CotkError
from . import sshsig
from .canonical import canonical_json, record_content
from .fileio import atomic_write

NS_RECORD = "cotk-repro-record"
NS_REPRODUCTION = "cotk-repro-reproduction"
SIG_FILE = "record.sig"
ENV_KEY = "COTK_REPRO_SIGNING_KEY"
ARMOR_BEGIN = "-----BEGIN SSH SIGNATURE-----"
ARMOR_END = "-----END SSH SIGNATURE-----"
#: key types accepted for signing records (ed25519, RSA, ECDSA and their security-key forms)
KNOWN_KEY_TYPES = (
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
)
MAX_SIGNATURE = 16 * 1024
TIMEOUT = 60


class SigningError(CotkError):
    """A key or a signature cannot be used; the message says which and why."""


@dataclass(frozen=True)
class PublicKey:
    """One SSH public key: its type, wire blob, comment and ``SHA256:`` fingerprint."""

    key_type: str
    blob: bytes
    comment: str = ""

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.blob)

    @property
    def line(self) -> str:
        """The key in ``authorized_keys`` form, without the comment."""
        return f"{self.key_type} {base64.b64encode(self.blob).decode()}"


@dataclass(frozen=True)
class SigningKey:
    """The key that signs: ``path`` is given to ``ssh-keygen -f``; ``agent`` when only the public half is known."""

    path: Path
    public: PublicKey
    source: str
    agent: bool = False


def fingerprint(blob: bytes) -> str:
    """``SHA256:<base64, no padding>`` of a public key blob, as ``ssh-keygen -l`` prints it."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def parse_public_key(text: str) -> PublicKey:
    """A public key from one ``TYPE BASE64 [COMMENT]`` line (a ``.pub`` file); raises :class:`SigningError`."""
    line = (text or "").strip()
    parts = line.split(None, 2)
    if len(parts) < 2:
        raise SigningError("this is not an SSH public key (expected 'TYPE BASE64 [COMMENT]', as in a .pub file)")
    key_type, b64 = parts[0], parts[1]
    try:
        blob = base64.b64decode(b64, validate=True)  # ValueError (not binascii.Error) for non-ASCII text
        inner = sshsig.key_type_of(blob)
    except (ValueError, sshsig.SshsigError):
        raise SigningError("the SSH public key's base64 part is malformed") from None
    if inner.decode("ascii", "replace") != key_type:
        raise SigningError(
            f"the SSH public key says {key_type!r} but holds a {inner[:40].decode('ascii', 'replace')!r} key"
        )
    if key_type not in KNOWN_KEY_TYPES:
        raise SigningError(f"unknown SSH key type {key_type!r}: use ed25519 (ssh-keygen -t ed25519), RSA or ECDSA")
    return PublicKey(key_type, blob, parts[2].strip() if len(parts) > 2 else "")


@dataclass(frozen=True)
class SignatureInfo:
    """What an armored SSHSIG signature says about itself (nothing here is verified)."""

    public: PublicKey
    namespace: str
    hash_alg: str
    parsed: sshsig.Sshsig | None = field(default=None, repr=False, compare=False)


def parse_signature(text: Any) -> SignatureInfo:
    """Read the public key and namespace out of an armored signature; raises :class:`SigningError`."""
    if not isinstance(text, str) or len(text) > MAX_SIGNATURE:
        raise SigningError("the signature is not an armored SSH signature (text, at most 16 KiB)")
    body = text.strip()
    if not body.startswith(ARMOR_BEGIN) or not body.endswith(ARMOR_END):
        raise SigningError(f"the signature is malformed: it must start with {ARMOR_BEGIN} and end with {ARMOR_END}")
    try:
        parsed = sshsig.parse(
            base64.b64decode("".join(body[len(ARMOR_BEGIN) : -len(ARMOR_END)].split()), validate=True)
        )
    except (ValueError, sshsig.SshsigError):  # ValueError covers binascii.Error and non-ASCII text
        raise SigningError("the signature is malformed: its blob is not an SSHSIG signature") from None
    kt = parsed.key_type
    if kt not in KNOWN_KEY_TYPES:
        raise SigningError(f"the signature is made with an unknown key type {kt[:60]!r}")
    return SignatureInfo(
        PublicKey(kt, parsed.public_key),
        parsed.namespace.decode("utf-8", "replace"),
        parsed.hash_alg.decode("ascii", "replace"),
        parsed,
    )


# -- what is signed -------------------------------------------------------------------------------------------
def record_bytes(record: dict[str, Any]) -> bytes:
    """The canonical bytes a record's id is computed from (the record without ``id``, every other key):
    :func:`.canonical.record_content`, the one definition of both scopes."""
    return record_content(record)


def reproduction_bytes(reproduction: dict[str, Any]) -> bytes:
    """The canonical bytes of a reproduction verdict (without a ``signature`` field)."""
    return canonical_json({k: v for k, v in reproduction.items() if k != "signature"})


# -- the key that signs -----------------------------------------------------------------------------------------
def _ssh_keygen() -> str:
    exe = shutil.which("ssh-keygen")
    if exe is None:
        raise SigningError("ssh-keygen is not installed (it signs and verifies; install OpenSSH 8.9 or newer)")
    return exe


def _git_signing_key(cwd: Path | None) -> str | None:
    from .git import config_value

    return config_value(cwd, "user.signingkey")


def _literal_key(text: str, source: str, workdir: Path) -> SigningKey:
    public = parse_public_key(text)
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"signing-key-{public.fingerprint[7:19].replace('/', '_').replace('+', '-')}.pub"
    path.write_text(public.line + "\n", encoding="utf-8")
    return SigningKey(path, public, source, agent=True)


def key_from_path(path: Path, source: str) -> SigningKey:
    """The signing key at ``path``: a private key (its ``.pub`` beside it) or a public key (signs through ssh-agent)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise SigningError(f"the signing key {path} ({source}) does not exist")
    pub_path = path if path.suffix == ".pub" else path.with_name(path.name + ".pub")
    if pub_path.is_file():
        text = pub_path.read_text(encoding="utf-8", errors="replace")
    else:
        proc = subprocess.run(  # noqa: S603 - ssh-keygen found by shutil.which; the key path is the user's own
            [_ssh_keygen(), "-y", "-P", "", "-f", str(path)],
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        if proc.returncode != 0:
            raise SigningError(
                f"the signing key {path} ({source}) has no {pub_path.name} beside it and its public "
                "half cannot be read without its passphrase",
                hint=f"write it with `ssh-keygen -y -f {path} > {pub_path}`",
            )
        text = proc.stdout.decode("utf-8", "replace")
    return SigningKey(path, parse_public_key(text), source, agent=path.suffix == ".pub")


def find_signing_key(cwd: Path | None = None, *, workdir: Path | None = None) -> SigningKey | None:
    """The key that signs: ``$COTK_REPRO_SIGNING_KEY``, git's ``user.signingkey``, else ``~/.ssh/id_ed25519``.

    A ``user.signingkey`` of the form ``key::ssh-ed25519 AAAA...`` (or a bare public key) signs through
    ssh-agent, as in git. None when there is no key at all.
    """
    env = os.environ.get(ENV_KEY)
    if env:
        return key_from_path(Path(env), f"${ENV_KEY}")
    configured = _git_signing_key(cwd)
    if configured:
        literal = configured.removeprefix("key::")
        if configured.startswith("key::") or literal.split(" ", 1)[0] in KNOWN_KEY_TYPES:
            from .userconfig import cache_dir

            return _literal_key(literal, "git config user.signingkey", workdir or cache_dir() / "signing-keys")
        return key_from_path(Path(configured), "git config user.signingkey")
    default = Path.home() / ".ssh" / "id_ed25519"
    if default.is_file():
        return key_from_path(default, "~/.ssh/id_ed25519")
    return None


# -- signing and verifying ---------------------------------------------------------------------------------------
def _run(args: list[str], data: bytes, what: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run([_ssh_keygen(), *args], input=data, capture_output=True, timeout=TIMEOUT, check=False)  # noqa: S603 - ssh-keygen found by shutil.which; fixed flags, data on stdin
    except subprocess.TimeoutExpired:
        raise SigningError(f"ssh-keygen took longer than {TIMEOUT} s to {what}") from None


def sign_bytes(data: bytes, namespace: str, key: SigningKey) -> str:
    """An armored SSHSIG signature of ``data`` by ``key`` (``ssh-keygen -Y sign``)."""
    args = ["-Y", "sign", "-n", namespace, "-f", str(key.path)]
    if key.agent:
        args.insert(2, "-U")  # the key is in ssh-agent (a public key was configured)
    proc = _run(args, data, "sign")
    text: str = proc.stdout.decode("ascii", "replace")
    if proc.returncode != 0 or ARMOR_BEGIN not in text:
        err = proc.stderr.decode("utf-8", "replace").strip()
        hint = (
            "load the key into ssh-agent (ssh-add) or sign with a key without passphrase"
            if "passphrase" in err.lower() or "agent" in err.lower() or key.agent
            else None
        )
        raise SigningError(f"signing with {key.public.fingerprint} ({key.source}) failed", log=err[-2000:], hint=hint)
    return text.strip() + "\n"


def sign_record(record: dict[str, Any], key: SigningKey) -> str:
    """The signature of a record (namespace ``cotk-repro-record``)."""
    return sign_bytes(record_bytes(record), NS_RECORD, key)


def sign_reproduction(reproduction: dict[str, Any], key: SigningKey) -> str:
    """The signature of a reproduction verdict (namespace ``cotk-repro-reproduction``)."""
    return sign_bytes(reproduction_bytes(reproduction), NS_REPRODUCTION, key)


def verify_bytes(
    data: bytes, signature: str, namespace: str, allowed: list[tuple[str, PublicKey]] | None = None
) -> SignatureInfo:
    """Check ``signature`` over ``data``; raises :class:`SigningError` when it does not verify.

    ``allowed``: ``(principal, key)`` pairs; the signature must be by one of these keys (as
    ``ssh-keygen -Y verify`` with an allowed-signers file). None: only that the signature is valid for
    the key it carries (as ``ssh-keygen -Y check-novalidate``). Ed25519, RSA and ECDSA signatures are
    checked in-process (:mod:`.sshsig`, with ``cryptography``); security-key (``sk-*``) ones by ssh-keygen.
    """
    info = parse_signature(signature)
    if info.namespace != namespace:
        raise SigningError(f"the signature is for {info.namespace!r}, not {namespace!r}")
    match: str | None = None
    if allowed is not None:
        match = next((p for p, k in allowed if k.blob == info.public.blob), None)
        if match is None:
            raise SigningError(
                f"the signature is by key {info.public.fingerprint}, which is not one of the signer's keys"
            )
    if sshsig.supports(info.public.key_type) and info.parsed is not None:  # parse_signature always sets it
        ok = sshsig.verify(info.parsed, data, namespace)
    else:
        ok = _ssh_keygen_verify(
            data, signature, namespace, None if allowed is None or match is None else (match, allowed)
        )
    if not ok:
        raise SigningError(
            f"the signature by {info.public.fingerprint} does not match the signed content "
            "(tampered, or signed over other bytes)"
        )
    return info


def _ssh_keygen_verify(
    data: bytes, signature: str, namespace: str, signer: tuple[str, list[tuple[str, PublicKey]]] | None
) -> bool:
    """``ssh-keygen -Y verify`` (with an allowed-signers file) or ``-Y check-novalidate`` (``signer`` None)."""
    with tempfile.TemporaryDirectory(prefix="cotk-repro-verify-") as tmp:
        sig = Path(tmp) / "data.sig"
        sig.write_text(signature, encoding="ascii", errors="replace")
        if signer is None:
            args = ["-Y", "check-novalidate", "-n", namespace, "-s", str(sig)]
        else:
            principal, allowed = signer
            signers = Path(tmp) / "allowed_signers"
            signers.write_text(
                "".join(f'"{_principal(p)}" namespaces="{namespace}" {k.line}\n' for p, k in allowed), encoding="utf-8"
            )
            args = ["-Y", "verify", "-f", str(signers), "-I", _principal(principal), "-n", namespace, "-s", str(sig)]
        return _run(args, data, "verify a signature").returncode == 0


def _principal(name: str) -> str:
    return "".join(c for c in name if c.isalnum() or c in "._-@+") or "signer"


def read_allowed_signers(path: Path) -> list[tuple[str, PublicKey]]:
    """``(principal, key)`` pairs of an allowed-signers file (git's ``gpg.ssh.allowedSignersFile`` format)."""
    try:
        lines = Path(path).expanduser().read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise SigningError(f"cannot read the allowed-signers file {path}: {exc.strerror}") from None
    out = []
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        principals, _, rest = line.partition(" ")
        words = rest.split()
        # skip options (namespaces="...", valid-after=...) up to the key type
        while words and words[0] not in KNOWN_KEY_TYPES and "=" in words[0]:
            words.pop(0)
        try:
            key = parse_public_key(" ".join(words))
        except SigningError as exc:
            raise SigningError(f"{path}:{n}: {exc.message}") from None
        for p in principals.strip('"').split(","):
            out.append((p, key))
    return out


# -- the record folder's signature -------------------------------------------------------------------------------
def sign_for_publish(folder: Path, record: dict[str, Any], cwd: Path | None = None) -> tuple[str | None, str | None]:
    """The record's signature for publishing: ``record.sig`` in its folder, made now when missing.

    Returns ``(signature or None, warning or None)``: without a key the record is published unsigned, with a
    warning; a ``record.sig`` that does not verify is replaced.
    """
    path = Path(folder) / SIG_FILE
    if path.is_file():
        existing = path.read_text(encoding="ascii", errors="replace")
        try:
            verify_bytes(record_bytes(record), existing, NS_RECORD)
            return existing, None
        except SigningError:
            pass
    key = find_signing_key(cwd)
    if key is None:
        return None, (
            "no SSH key to sign with (git config user.signingkey, or ~/.ssh/id_ed25519): the record is "
            "published unsigned, and dashboards that require signatures refuse it; see `cotk-repro keys`"
        )
    signature = sign_record(record, key)
    atomic_write(path, signature)  # ASCII: the armoured SSHSIG text
    return signature, None


def sign_for_submit(reproduction: dict[str, Any], cwd: Path | None = None) -> str | None:
    """The reproducer's signature of a verdict about to be submitted, None without a key."""
    key = find_signing_key(cwd)
    return None if key is None else sign_reproduction(reproduction, key)


def make_key(path: Path, comment: str) -> Path | None:
    """A new ed25519 key without passphrase at ``path`` (``ssh-keygen -t ed25519``); None without ssh-keygen."""
    if shutil.which("ssh-keygen") is None:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(  # noqa: S603 - ssh-keygen found by shutil.which; the user's own key path and comment
        [_ssh_keygen(), "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    if proc.returncode != 0:
        raise SigningError(
            f"ssh-keygen could not make a key at {path}", log=proc.stderr.decode("utf-8", "replace")[-2000:]
        )
    return path
