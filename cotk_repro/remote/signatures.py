"""Check the signatures of published records, offline (``cotk-repro verify``, and ``reproduce`` before it runs).

Each record on the records ref has ``record.sig`` beside ``record.json``: an SSHSIG signature
(namespace ``cotk-repro-record``) over the canonical bytes the record id is computed from.
A signature is *valid* when it verifies (SSHSIG, :mod:`cotk_repro.core.sshsig`) for the key it carries; with an
allowed-signers file (``--allowed-signers``, else git's ``gpg.ssh.allowedSignersFile``) the key
must also be one of those listed, and the signer is named by its principal there.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..core.git import config_value
from ..core.signing import (
    MAX_SIGNATURE,
    NS_RECORD,
    SIG_FILE,
    PublicKey,
    SigningError,
    read_allowed_signers,
    record_bytes,
    verify_bytes,
)
from ..errors import RecordError
from ..records import RecordView, short_id, validate_record

VALID, UNSIGNED, INVALID, UNKNOWN_SIGNER = "valid", "unsigned", "invalid", "unknown signer"


def allowed_signers(path: str | Path | None, cwd: Path | None = None) -> list[tuple[str, PublicKey]] | None:
    """The ``(principal, key)`` pairs of ``path``, else of git's ``gpg.ssh.allowedSignersFile``; None without either."""
    if path is None:
        configured = config_value(cwd, "gpg.ssh.allowedSignersFile")
        if configured is None:
            return None
        path = configured
    return read_allowed_signers(Path(path).expanduser())


def check_signature(
    record: dict[str, Any], signature: str | None, allowed: list[tuple[str, PublicKey]] | None
) -> dict[str, Any]:
    """``{"id", "status", "signer", "fingerprint", "detail"}`` for one record and its signature text."""
    row: dict[str, Any] = {
        "id": record.get("id"),
        "status": UNSIGNED,
        "signer": None,
        "fingerprint": None,
        "detail": f"no {SIG_FILE} beside the record",
    }
    try:  # its shape and id: a valid signature over a malformed record, or under a forged id, is still invalid
        validate_record(record, "the record")
    except RecordError as exc:
        return {**row, "status": INVALID, "detail": exc.message}
    if not signature:
        return row
    try:
        info = verify_bytes(record_bytes(record), signature, NS_RECORD)
    except SigningError as exc:
        return {**row, "status": INVALID, "detail": exc.message}
    except (TypeError, ValueError) as exc:
        return {**row, "status": INVALID, "detail": f"the record cannot be hashed: {exc}"}
    row.update(fingerprint=info.public.fingerprint, status=VALID, detail="signature verified")
    if allowed is not None:
        names = [p for p, k in allowed if k.blob == info.public.blob]
        if not names:
            row.update(
                status=UNKNOWN_SIGNER,
                detail=f"valid signature, but key {info.public.fingerprint} is not in the allowed signers",
            )
        else:
            row["signer"] = names[0]
    return row


def ref_signature(git_dir: Path, rev: str, record: dict[str, Any]) -> str | None:
    """The ``record.sig`` text beside a record on ``rev`` of a (bare) repository, or None."""
    from .gitrecords import read_file, record_path

    rid = RecordView.of(record).id  # a stranger's record, not validated yet: None unless a string
    if not (rid is not None and re.fullmatch(r"sha256:[0-9a-f]{64}", rid)):
        return None
    data = read_file(git_dir, rev, f"{record_path(rid)}/{SIG_FILE}", limit=MAX_SIGNATURE)
    return data.decode("ascii", "replace") if data else None


def check_before_reproduce(
    git_dir: Path | None, rev: str, record: dict[str, Any], *, allow_unsigned: bool = False
) -> tuple[dict[str, Any], str]:
    """The signature row of the record about to be reproduced and one line saying who signed it.

    Raises :class:`SigningError` when the record is unsigned or its signature is bad (tampered record,
    wrong namespace, malformed), unless ``allow_unsigned``.
    """
    signature = ref_signature(git_dir, rev, record) if git_dir is not None else None
    row = check_signature(record, signature, allowed_signers(None))
    sid = short_id(str(record.get("id")))
    if row["status"] == INVALID:
        line = f"record {sid} has a BAD signature: {row['detail']}"
        if not allow_unsigned:
            raise SigningError(
                line, hint="the record may have been tampered with; --allow-unsigned reproduces it anyway"
            )
    elif row["status"] == UNSIGNED:
        line = f"record {sid} is unsigned: nothing proves who published it"
        if not allow_unsigned:
            raise SigningError(
                f"record {sid} is unsigned, so nothing proves who published it; --allow-unsigned reproduces it anyway"
            )
    else:
        who = f"{row['signer']} ({row['fingerprint']})" if row["signer"] else row["fingerprint"]
        line = f"record {sid} is signed by {who}: signature valid" + (
            "" if row["status"] == VALID else ", but the key is not in your allowed signers"
        )
    return row, line
