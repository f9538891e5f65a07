"""The dashboard's tables (SQLAlchemy 2 declarative models).

The schema itself is created and upgraded by the Alembic migrations in
``migrations/versions``; these models describe it for queries. Records are
stored verbatim (``body``, the JSON text of the record as uploaded) plus the
columns the leaderboards and listings filter on; ``results`` holds one row per
metric of every successful record (the leaderboard index).
"""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    SmallInteger,
    String,
    Text,
    UniqueConstraint,
    false,
    text,
    true,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

#: longest task / dataset / project / metric name the dashboard accepts
NAME_MAX = 200


class Base(DeclarativeBase):
    """The declarative base of the dashboard's tables."""


class User(Base):
    """A dashboard user: a unique name and when it was created."""

    __tablename__ = "users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    created_at: Mapped[str] = mapped_column(String(40), nullable=False)


class Token(Base):
    """A bearer token, stored as the hex SHA-256 of the token (never the token itself)."""

    __tablename__ = "tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    created_at: Mapped[str] = mapped_column(String(40), nullable=False)
    revoked_at: Mapped[str | None] = mapped_column(String(40), nullable=True)


class SshKey(Base):
    """A user's SSH public key: uploads signed by it are theirs. Revoked keys sign nothing new."""

    __tablename__ = "ssh_keys"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True)
    fingerprint: Mapped[str] = mapped_column(String(80), unique=True, nullable=False)
    key_type: Mapped[str] = mapped_column(String(64), nullable=False)
    public_key: Mapped[str] = mapped_column(Text, nullable=False)
    comment: Mapped[str] = mapped_column(String(200), nullable=False, default="")
    created_at: Mapped[str] = mapped_column(String(40), nullable=False)
    revoked_at: Mapped[str | None] = mapped_column(String(40), nullable=True)
    #: how the registration was made: "possession" (the holder signed a challenge), "operator" (the
    #: administrator vouched, ``dashboard add-user --ssh-key``), None (unproven: added through the API
    #: before proofs were asked; signs nothing until its holder proves possession)
    proof: Mapped[str | None] = mapped_column(String(16), nullable=True)
    proven_at: Mapped[str | None] = mapped_column(String(40), nullable=True)
    #: the dashboard origin the proof of possession named (the configured public origin; NULL: no proof,
    #: or one demoted by migration 0009_key_origin)
    proof_origin: Mapped[str | None] = mapped_column(String(300), nullable=True)


class KeyChallenge(Base):
    """A single-use challenge issued to a user for registering a key (proof of possession)."""

    __tablename__ = "key_challenges"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True)
    nonce: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    origin: Mapped[str] = mapped_column(String(300), nullable=False)
    created_at: Mapped[str] = mapped_column(String(40), nullable=False)
    expires_at: Mapped[str] = mapped_column(String(40), nullable=False)
    #: epoch seconds of the expiry (compared; ``expires_at`` is what the challenge text says)
    expires_epoch: Mapped[int] = mapped_column(Integer, nullable=False)
    used_at: Mapped[str | None] = mapped_column(String(40), nullable=True)


class KeyAudit(Base):
    """One change of a key's holder: a proven holder took over a key registered to someone else unproven."""

    __tablename__ = "key_audit"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    at: Mapped[str] = mapped_column(String(40), nullable=False)
    fingerprint: Mapped[str] = mapped_column(String(80), nullable=False, index=True)
    action: Mapped[str] = mapped_column(String(32), nullable=False)
    from_user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), nullable=True)
    to_user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), nullable=True)
    records: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    reproductions: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    detail: Mapped[str] = mapped_column(Text, nullable=False, default="")


class Name(Base):
    """A name a dashboard holds (metric, task, dataset, project), once per key (:func:`.names.keys`): a name
    sharing a key with a stored one of its kind is another spelling of it, and refused."""

    __tablename__ = "names"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    key: Mapped[str] = mapped_column(String(64), nullable=False)
    name: Mapped[str] = mapped_column(String(NAME_MAX), nullable=False)

    __table_args__ = (UniqueConstraint("kind", "key", name="uq_names_kind_key"),)


class Record(Base):
    """A record; ``user_id`` is its owner: the signer (or, unsigned, the uploader)."""

    __tablename__ = "records"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    record_id: Mapped[str] = mapped_column(String(80), unique=True, nullable=False)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), nullable=False)
    task: Mapped[str] = mapped_column(String(NAME_MAX), nullable=False)
    dataset: Mapped[str] = mapped_column(String(NAME_MAX), nullable=False)
    project_name: Mapped[str] = mapped_column(String(NAME_MAX), nullable=False)
    status: Mapped[str] = mapped_column(String(32), nullable=False)
    submitted_at: Mapped[str] = mapped_column(String(40), nullable=False)
    body: Mapped[str] = mapped_column(Text, nullable=False)
    signature: Mapped[str | None] = mapped_column(Text, nullable=True)
    key_fingerprint: Mapped[str | None] = mapped_column(String(80), nullable=True)
    #: the git remote taken at publish time, signed (``{"publication", "signature"}`` JSON), for a record made
    #: before its project had one (:mod:`cotk_repro.remote.publication`)
    publication: Mapped[str | None] = mapped_column(Text, nullable=True)
    #: distinct users other than the owner whose latest verdict is "reproduced" (kept on every reproduction)
    reproduced_by: Mapped[int] = mapped_column(Integer, nullable=False, default=0, server_default=text("0"))
    #: run from a work tree with uncommitted changes (the record's ``code.dirty``)
    dirty: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False, server_default=false())
    #: what the reproductions of it say (:func:`cotk_repro.core.ranking.standing`): "unverified", "verified",
    #: "disputed" or "refuted"; kept by :mod:`.standing` in every transaction that adds a reproduction
    standing: Mapped[str] = mapped_column(String(16), nullable=False, server_default=text("'unverified'"))

    __table_args__ = (
        Index("ix_records_task_dataset", "task", "dataset", "id"),
        Index("ix_records_user", "user_id", "id"),
    )


class Result(Base):
    """One metric value of a record, denormalised with its task, dataset and comparability hash for leaderboards."""

    __tablename__ = "results"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    record_pk: Mapped[int] = mapped_column(ForeignKey("records.id", ondelete="CASCADE"), nullable=False)
    task: Mapped[str] = mapped_column(String(NAME_MAX), nullable=False)
    dataset: Mapped[str] = mapped_column(String(NAME_MAX), nullable=False)
    metric: Mapped[str] = mapped_column(String(NAME_MAX), nullable=False)
    hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    value: Mapped[float] = mapped_column(Float, nullable=False)
    #: the result's tier (:func:`cotk_repro.core.ranking.tier`): 0 verified by reproduction, 1 signed, clean and
    #: pinned, 2 the rest (dirty, unsigned, unpinned, disputed); a lower tier ranks above every higher one
    #: (recomputed by :mod:`.standing` when a reproduction arrives or a signed upload adopts the record)
    #: (the column's server default, 1, dates from migration 0008; every write names the tier)
    tier: Mapped[int] = mapped_column(SmallInteger, nullable=False, default=2, server_default=text("1"))
    #: False: computed on the outputs of a system not pinned to its weights, derived from what the record
    #: describes (:meth:`cotk_repro.records.view.RecordView.pinned`: an ``openai`` system is unpinned whatever
    #: it claims)
    pinned: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True, server_default=true())

    __table_args__ = (
        UniqueConstraint("record_pk", "metric", name="uq_results_record_metric"),
        Index("ix_results_board_v3", "task", "dataset", "metric", "hash", "tier", "value", "record_pk"),
    )


class BoardGroup(Base):
    """How many results each leaderboard group holds (``hash`` "" = unverifiable), kept on upload."""

    __tablename__ = "board_groups"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    task: Mapped[str] = mapped_column(String(NAME_MAX), nullable=False)
    dataset: Mapped[str] = mapped_column(String(NAME_MAX), nullable=False)
    metric: Mapped[str] = mapped_column(String(NAME_MAX), nullable=False)
    hash: Mapped[str] = mapped_column(String(64), nullable=False)
    n: Mapped[int] = mapped_column(Integer, nullable=False)

    __table_args__ = (UniqueConstraint("task", "dataset", "metric", "hash", name="uq_board_groups"),)


class Mirror(Base):
    """Another user uploaded a record signed by its owner: kept as theirs to point at, never as theirs to own."""

    __tablename__ = "mirrors"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    record_pk: Mapped[int] = mapped_column(ForeignKey("records.id", ondelete="CASCADE"), nullable=False)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=False)
    submitted_at: Mapped[str] = mapped_column(String(40), nullable=False)

    __table_args__ = (UniqueConstraint("record_pk", "user_id", name="uq_mirrors_record_user"),)


class Reproduction(Base):
    """A reproduction; ``verdict`` is the server's (recomputed), ``client_verdict`` what the upload claimed."""

    __tablename__ = "reproductions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    record_pk: Mapped[int] = mapped_column(ForeignKey("records.id", ondelete="CASCADE"), nullable=False, index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), nullable=False)
    submitted_at: Mapped[str] = mapped_column(String(40), nullable=False)
    verdict: Mapped[str] = mapped_column(String(32), nullable=False)
    body: Mapped[str] = mapped_column(Text, nullable=False)
    client_verdict: Mapped[str | None] = mapped_column(String(32), nullable=True)
    signature: Mapped[str | None] = mapped_column(Text, nullable=True)
    key_fingerprint: Mapped[str | None] = mapped_column(String(80), nullable=True)
    #: the record's owner reproducing their own record (shown apart, never counted)
    by_author: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False, server_default=false())
    #: a newer reproduction by the same user replaced this one
    superseded: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False, server_default=false())
    #: made by the dashboard's own worker pool (``dashboard worker --db``): its "reproduced" verifies alone
    pool: Mapped[bool] = mapped_column(Boolean, nullable=False, server_default=false())

    __table_args__ = (Index("ix_reproductions_record_user", "record_pk", "user_id", "superseded"),)


class Meta(Base):
    """Key/value counters; ``generation`` goes up on every write (it keys the page caches)."""

    __tablename__ = "dashboard_meta"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[int] = mapped_column(Integer, nullable=False)
