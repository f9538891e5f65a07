"""``cotk-repro verify``: check the signature of every record published at a source, offline.

The checks themselves (:func:`~cotk_repro.remote.signatures.check_signature`, allowed signers, the
``record.sig`` beside a record on the records ref) are :mod:`cotk_repro.remote.signatures`, which
``reproduce`` uses too; this module reads a stranger's records ref (through :mod:`cotk_repro.reproduce.fetch`)
and checks each record on it.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from .core.signing import SigningError
from .records import short_id
from .remote.signatures import INVALID, UNSIGNED, VALID, allowed_signers, check_signature, ref_signature

__all__ = ["INVALID", "UNSIGNED", "VALID", "verify_source"]


def verify_source(
    source_text: str, *, allowed_signers_file: str | None = None, cwd: Path | None = None
) -> list[dict[str, Any]]:
    """Check every record published at SOURCE (``user/repo``, a git URL or a path); one row per record."""
    from .reproduce.fetch import LOCAL_RECORDS, RemoteRepo
    from .reproduce.source import resolve

    allowed = allowed_signers(allowed_signers_file, cwd)
    workdir = Path(tempfile.mkdtemp(prefix="cotk-repro-verify-"))
    try:
        source = resolve(source_text)
        if source.git_url is None:
            raise SigningError(f"{source_text} names no git repository to read records from")
        repo = RemoteRepo(source.git_url, source.text, workdir, user_typed=source.user_typed)
        repo.init()
        rows = []
        for record in repo.fetch_records():
            row = check_signature(record, ref_signature(repo.git_dir, LOCAL_RECORDS, record), allowed)
            row["short_id"] = short_id(str(record.get("id")))
            rows.append(row)
        for path, why in repo.skipped:  # a gitlink, a huge blob, not JSON: a verdict for that entry alone
            rows.append(
                {
                    "id": None,
                    "status": INVALID,
                    "signer": None,
                    "fingerprint": None,
                    "detail": why,
                    "short_id": path.split("/")[1][:12],
                }
            )
        return rows
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
