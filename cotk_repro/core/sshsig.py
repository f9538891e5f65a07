"""In-process verification of SSHSIG signatures (OpenSSH ``PROTOCOL.sshsig``), with ``cryptography``.

``ssh-keygen -Y verify`` costs a process start (~45 ms) per signature, which is most of what a
dashboard upload costs; this module does the same check in-process. Only the SSH wire format is
parsed here; every primitive (Ed25519, RSA PKCS#1 v1.5, ECDSA, SHA-2) is the ``cryptography``
library's. It follows OpenSSH's ``sshsig.c`` / ``sshkey.c`` rule by rule, so that both agree on
every input (``tests/test_sshsig.py`` checks them side by side):

* the blob is ``"SSHSIG"``, version 1, publickey, namespace, reserved, hash algorithm (``sha256`` or
  ``sha512``), signature, and nothing after;
* the signed data is ``"SSHSIG"`` + string(namespace) + string("") + string(hash algorithm) +
  string(H(message)): the reserved field is signed empty, as OpenSSH does;
* RSA signatures must be ``rsa-sha2-256`` or ``rsa-sha2-512`` (never SHA-1) by a key of >= 1024 bits;
  ECDSA uses the curve's hash (P-256: SHA-256, P-384: SHA-384, P-521: SHA-512).

Security-key types (``sk-*``) carry authenticator data this module does not check: :func:`supports`
says False for them and the caller asks ``ssh-keygen``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

MAGIC = b"SSHSIG"
VERSION = 1
HASHES = {"sha256": hashlib.sha256, "sha512": hashlib.sha512}
RSA_SIG_HASHES = {"rsa-sha2-256": "SHA256", "rsa-sha2-512": "SHA512"}
EC_CURVES = {
    "ecdsa-sha2-nistp256": ("nistp256", "SECP256R1", "SHA256"),
    "ecdsa-sha2-nistp384": ("nistp384", "SECP384R1", "SHA384"),
    "ecdsa-sha2-nistp521": ("nistp521", "SECP521R1", "SHA512"),
}
RSA_MIN_BITS, RSA_MAX_BITS = 1024, 16384  # OpenSSH's SSH_RSA_MINIMUM/MAXIMUM_MODULUS_SIZE
MPINT_MAX = 16384 // 8  # OpenSSH's SSHBUF_MAX_BIGNUM (leading zero bytes aside)
IN_PROCESS_TYPES = ("ssh-ed25519", "ssh-rsa", *EC_CURVES)


class SshsigError(ValueError):
    """The blob is not a well-formed SSHSIG signature (a one-line reason)."""


@dataclass(frozen=True)
class Sshsig:
    """The fields of an SSHSIG blob (nothing verified yet)."""

    public_key: bytes
    namespace: bytes
    reserved: bytes
    hash_alg: bytes
    signature: bytes

    @property
    def key_type(self) -> str:
        """The type the public key names (e.g. ``ssh-ed25519``)."""
        return key_type_of(self.public_key).decode("ascii", "replace")


class _Reader:
    """SSH wire-format reader (RFC 4251 ``string``, ``mpint``) over one buffer."""

    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise SshsigError("truncated")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def uint32(self) -> int:
        return int.from_bytes(self.take(4), "big")

    def string(self) -> bytes:
        return self.take(self.uint32())

    def mpint(self) -> int:
        raw = self.string()
        if raw and raw[0] & 0x80:
            raise SshsigError("negative mpint")
        if len(raw.lstrip(b"\0")) > MPINT_MAX:
            raise SshsigError("mpint too large")
        return int.from_bytes(raw, "big")

    def end(self) -> None:
        if self.pos != len(self.data):
            raise SshsigError("trailing data")


def key_type_of(public_key: bytes) -> bytes:
    """The type name a public key blob starts with (its first SSH string); raises :class:`SshsigError`."""
    return _Reader(public_key).string()


def _string(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def parse(blob: bytes) -> Sshsig:
    """The fields of a de-armored SSHSIG blob; raises :class:`SshsigError`."""
    r = _Reader(blob)
    if r.take(6) != MAGIC:
        raise SshsigError("no SSHSIG magic")
    if r.uint32() != VERSION:
        raise SshsigError("unsupported SSHSIG version")
    sig = Sshsig(r.string(), r.string(), r.string(), r.string(), r.string())
    r.end()
    key_type_of(sig.public_key)  # the key names its type
    return sig


def signed_data(namespace: bytes, hash_alg: str, message: bytes) -> bytes:
    """What the key signs: preamble, namespace, (empty) reserved, hash algorithm, H(message)."""
    if hash_alg not in HASHES:
        raise SshsigError(f"unsupported hash algorithm {hash_alg[:20]!r}")
    return (
        MAGIC
        + _string(namespace)
        + _string(b"")
        + _string(hash_alg.encode())
        + _string(HASHES[hash_alg](message).digest())
    )


def supports(key_type: str) -> bool:
    """Whether :func:`verify` checks this key type in-process (not the ``sk-*`` security-key types)."""
    return key_type in IN_PROCESS_TYPES


def verify(sig: Sshsig, message: bytes, namespace: str) -> bool:
    """True when ``sig`` is a valid signature over ``message`` in ``namespace`` by the key it carries.

    False for any mismatch (other namespace, other bytes, other key, bad encoding); raises
    :class:`SshsigError` only for a key type :func:`supports` refuses.
    """
    from cryptography.exceptions import InvalidSignature

    if not supports(sig.key_type):
        raise SshsigError(f"key type {sig.key_type[:60]!r} is not verified in-process")
    if not namespace or sig.namespace != namespace.encode("utf-8"):
        return False
    try:
        data = signed_data(sig.namespace, sig.hash_alg.decode("ascii"), message)
        key = _Reader(sig.public_key)
        key_type = key.string().decode("ascii")
        outer = _Reader(sig.signature)
        sig_type = outer.string().decode("ascii")
        blob = outer.string()
        outer.end()
        _CHECKS[key_type](key, key_type, sig_type, blob, data)
        return True
    except (SshsigError, InvalidSignature, UnicodeDecodeError, ValueError):
        return False


def _ed25519(key: _Reader, key_type: str, sig_type: str, blob: bytes, data: bytes) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    raw = key.string()
    key.end()
    if sig_type != key_type or len(raw) != 32 or len(blob) != 64:
        raise SshsigError("not an Ed25519 signature")
    Ed25519PublicKey.from_public_bytes(raw).verify(blob, data)


def _rsa(key: _Reader, key_type: str, sig_type: str, blob: bytes, data: bytes) -> None:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    e, n = key.mpint(), key.mpint()
    key.end()
    if sig_type not in RSA_SIG_HASHES:  # "ssh-rsa" (SHA-1) is refused for SSHSIG, as in OpenSSH
        raise SshsigError("unacceptable RSA signature algorithm")
    size = (n.bit_length() + 7) // 8
    if not RSA_MIN_BITS <= n.bit_length() <= RSA_MAX_BITS or len(blob) > size:
        raise SshsigError("RSA key too small or signature too long")
    blob = blob.rjust(size, b"\0")  # OpenSSH accepts a signature shorter than the modulus, zero-padded
    public = rsa.RSAPublicNumbers(e, n).public_key()
    public.verify(blob, data, padding.PKCS1v15(), getattr(hashes, RSA_SIG_HASHES[sig_type])())


def _ecdsa(key: _Reader, key_type: str, sig_type: str, blob: bytes, data: bytes) -> None:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

    curve_name, curve, digest = EC_CURVES[key_type]
    if key.string() != curve_name.encode():
        raise SshsigError("ECDSA key names another curve")
    point = key.string()
    key.end()
    if sig_type != key_type:
        raise SshsigError("not an ECDSA signature of this curve")
    rs = _Reader(blob)
    r, s = rs.mpint(), rs.mpint()
    rs.end()
    public = ec.EllipticCurvePublicKey.from_encoded_point(getattr(ec, curve)(), point)
    public.verify(encode_dss_signature(r, s), data, ec.ECDSA(getattr(hashes, digest)()))


_CHECKS = {"ssh-ed25519": _ed25519, "ssh-rsa": _rsa, **{t: _ecdsa for t in EC_CURVES}}
