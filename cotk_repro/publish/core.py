"""``cotk-repro publish``: hand one local record to each chosen publish target, in order.

The targets are ``--target`` (repeatable), else ``publish.targets`` in the project config, else
``git`` (the record's commit and the record to the git remote) then ``dashboard``. Any registered
publish target (built-in or plugin) can be named.

Idempotent: publishing the same record twice changes nothing the second time. A
failure never touches the local record (``.cotk-repro/runs/<hex>/``), and its
message says how to retry.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..capture.git import open_repo
from ..core.config import load_config
from ..core.signing import sign_for_publish
from ..errors import CotkError
from ..plugins import get_plugins
from ..records import RecordView, RunStore, short_id, validate_record
from . import PublishError
from .targets import PublishContext, remote_name


def resolve_dashboard(explicit: str | None, config) -> str | None:
    """Return the dashboard URL to publish to: the explicit one, else ``COTK_REPRO_DASHBOARD_URL``, else the
    project's, else the logged-in default."""
    from ..core import userconfig

    return (
        explicit
        or os.environ.get("COTK_REPRO_DASHBOARD_URL")
        or config.get("dashboard", "url")
        or userconfig.default_dashboard()
    )


def chosen_by_user(explicit: str | None, url: str | None) -> bool:
    """Whether the user (not the project's committed config) named ``url``: ``--dashboard``,
    ``COTK_REPRO_DASHBOARD_URL`` or `cotk-repro login`. Only then may an environment token be sent there."""
    from ..core import userconfig

    if not url:
        return False
    if explicit:
        return True
    try:
        norm = userconfig.normalize_url(url)
        env = os.environ.get("COTK_REPRO_DASHBOARD_URL")
        return bool(env and userconfig.normalize_url(env) == norm) or userconfig.knows_dashboard(norm)
    except CotkError:
        return False


def current_remote_url(root: Path, name: str) -> str | None:
    """The URL of the git remote ``name`` as a record would hold it (credentials stripped, a path as
    ``local:NAME``), None when the repository has no such remote."""
    from ..capture.git import strip_credentials
    from ..core.git import git

    proc = git(root, "remote", "get-url", "--", name, check=False)
    if proc.returncode != 0:
        return None
    return strip_credentials(proc.stdout.decode("utf-8", "replace").strip(), name) or None


def publication_for(
    root: Path, folder: Path, record: dict[str, Any], remote: str, *, dashboard: bool
) -> tuple[dict[str, Any] | None, str | None]:
    """``(publication, its remote URL)`` to publish beside ``record`` (:mod:`cotk_repro.remote.publication`).

    A record that names a remote a stranger can fetch needs none: ``(None, None)``. Otherwise the remote is the
    repository's ``remote`` now (the record was made before ``git remote add``); its publication is signed
    with the key that signs records and kept as ``publication.json`` in the record's folder (made again only
    when the remote changed). With the dashboard among the targets, a record that still names no remote anyone
    could fetch from is refused here with the sentence ``reproduce`` would give for it; without, a path-only
    remote is fine (a reproduction from the git location itself does not read the record's remote).
    """
    from ..core.fileio import atomic_write
    from ..core.signing import find_signing_key
    from ..remote import publication as pub

    rid = short_id(record["id"])
    recorded = (record.get("code") or {}).get("remote_url")
    if not pub.takes_publication(recorded):
        if dashboard:
            try:
                pub.fetchable_remote(record["id"], recorded)
            except pub.PublicationError as exc:
                raise PublishError(exc.message) from None
        return None, None
    url = current_remote_url(root, remote)
    if url is None:
        if not dashboard:
            return None, None
        if recorded:
            url = recorded
        else:
            raise PublishError(
                f"record {rid} names no git remote and this repository has no git remote named "
                f"{remote!r}, so a reproduction from the dashboard could not fetch its code",
                hint=f"add one with `git remote add {remote} URL` and publish again (the record "
                "is not run again), or publish with --no-dashboard",
            )
    try:
        pub.fetchable_remote(record["id"], url)
    except pub.PublicationError as exc:
        if dashboard:
            raise PublishError(
                exc.message,
                hint="a dashboard's reproducers fetch the code from the remote: add "
                "one they can reach (https://, ssh:// or git://) with `git remote "
                f"set-url {remote} URL`, or publish with --no-dashboard",
            ) from None
        return None, None
    path = folder / pub.PUBLICATION_FILE
    key = find_signing_key(root)
    existing = pub.loads(path.read_bytes()) if path.is_file() else None
    if (
        isinstance(existing, dict)
        and isinstance(existing.get("publication"), dict)
        and existing["publication"].get("remote_url") == url
        and existing["publication"].get("record_id") == record["id"]
        and _signed_by(existing.get("signature")) == (key.public.fingerprint if key else None)
    ):
        return existing, url
    attachment = pub.make(record, url, key)
    atomic_write(path, pub.dumps(attachment))
    return attachment, url


def choose_targets(
    explicit: list[str] | None, config, *, use_git: bool = True, use_dashboard: bool = True
) -> list[str]:
    """The publish targets to run, in order: ``explicit``, else ``publish.targets``; less git / dashboard when
    switched off. Unknown names are an error listing the registered targets."""
    from ..plugins import registry

    chosen = list(dict.fromkeys(explicit or config.get("publish", "targets")))
    known = registry("publish_target")
    unknown = [t for t in chosen if t not in known]
    if unknown:
        refused = get_plugins().refusal("publish_target", unknown[0])
        if refused is not None:
            raise PublishError(refused)
        raise PublishError(f"unknown publish target {unknown[0]!r}; registered: {', '.join(sorted(known)) or 'none'}")
    chosen = [t for t in chosen if (use_git or t != "git") and (use_dashboard or t != "dashboard")]
    if not chosen:
        raise PublishError("nothing to publish to: every target was switched off (--no-git / --no-dashboard)")
    return chosen


def publish(
    cwd: Path,
    record_ref: str = "latest",
    *,
    remote: str | None = None,
    dashboard: str | None = None,
    use_git: bool = True,
    use_dashboard: bool = True,
    push: bool | None = None,
    targets: list[str] | None = None,
    on_status: Callable[[str], None] | None = None,
    allow_unsigned: bool = False,
) -> dict[str, Any]:
    """Publish one local record; returns ``{"id", "folder", "steps": [...], "warnings": [...]}``.

    Without a signing key, a publish that would upload to a dashboard is refused before anything is sent (a
    dashboard refuses unsigned records unless it was started with ``--allow-unsigned``: ``allow_unsigned``
    says it was); to git alone the record goes unsigned, with a warning."""
    repo = open_repo(Path(cwd))
    root = Path(repo.working_tree_dir)
    config = load_config(root)
    store = RunStore(root)
    folder = store.resolve(record_ref)
    record = validate_record(store.load_folder(folder), f"record {folder.name[:12]}")
    view = RecordView.of(record)  # validated: every field below is there and of its type
    rid = short_id(view.id or "")
    if not view.ok:
        raise PublishError(f"record {rid} is marked {view.status}; only successful records can be published")
    warnings = []
    if view.code.dirty:
        warnings.append(
            f"record {rid} was made from a dirty work tree: a reproduction checks out commit "
            f"{(view.code.commit or '')[:12]} without those changes"
        )
    signature, note = sign_for_publish(folder, record, root)
    if note:
        warnings.append(note)
    ctx = PublishContext(
        root=root,
        record=record,
        folder=folder,
        config=config,
        remote=remote,
        push=bool(config.get("publish", "push") if push is None else push),
        dashboard_url=resolve_dashboard(dashboard, config),
        dashboard_explicit=bool(dashboard),
        dashboard_user_chosen=chosen_by_user(dashboard, resolve_dashboard(dashboard, config)),
        on_status=on_status or (lambda _m: None),
        signature=signature,
    )
    chosen = choose_targets(targets, config, use_git=use_git, use_dashboard=use_dashboard)
    if signature is None and "dashboard" in chosen and ctx.dashboard_url and not allow_unsigned:
        # checked before any target runs: a git push followed by the dashboard's 403 would publish half
        raise PublishError(
            f"record {rid} cannot be signed (no SSH key: git config user.signingkey, COTK_REPRO_SIGNING_KEY or "
            f"~/.ssh/id_ed25519) and the dashboard at {ctx.dashboard_url} accepts only signed records, so nothing "
            "was sent",
            hint="make a key with `ssh-keygen -t ed25519`, register it with `cotk-repro keys add`, and publish "
            "again (or publish with --no-dashboard)",
        )
    # the remote taken now, beside the record (its id unchanged): before anything is sent anywhere
    ctx.publication, publication_url = publication_for(
        root, folder, record, remote_name(remote, config), dashboard="dashboard" in chosen and bool(ctx.dashboard_url)
    )
    if ctx.publication is not None and _signer(signature) != _signed_by(ctx.publication.get("signature")):
        # a reproducer uses the remote only when the key that signed the record signed it too
        raise PublishError(
            f"record {rid} is signed by key {_signer(signature) or 'none'}, but its git remote "
            f"would be signed by key {_signed_by(ctx.publication.get('signature')) or 'none'}; "
            "reproducers use the remote only when one key signed both",
            hint="sign with the key that signed the record (git config user.signingkey, or "
            "COTK_REPRO_SIGNING_KEY), then publish again",
        )
    # every target's own checks (the dashboard: a token, and the signing key registered there) before any sends
    targets_to_run = {
        name: get_plugins().build("publish_target", name)
        for name in chosen
        if not (name == "dashboard" and not ctx.dashboard_url)
    }
    for target in targets_to_run.values():
        preflight = getattr(target, "preflight", None)
        if preflight is not None:
            preflight(ctx)
    steps: list[dict[str, Any]] = []
    for name in chosen:
        if name not in targets_to_run:
            steps.append(
                {
                    "target": "dashboard",
                    "status": "skipped",
                    "detail": "no dashboard configured (dashboard.url, --dashboard or `cotk-repro login`)",
                }
            )
            continue
        target = targets_to_run[name]
        try:
            steps.append(target.publish(ctx))
        except PublishError as exc:
            exc.steps = steps + exc.steps
            raise
    return {
        "id": record["id"],
        "folder": str(folder),
        "steps": steps,
        "warnings": warnings,
        "signed_by": _signer(signature),
        "remote_url": publication_url or record["code"].get("remote_url"),
        "remote_from": "publication" if publication_url else "record",
    }


def _signed_by(signature: Any) -> str | None:
    """The fingerprint an attachment's signature names (not verified), None when unsigned or unreadable."""
    from ..core.signing import SigningError

    try:
        return _signer(signature) if isinstance(signature, str) else None
    except SigningError:
        return None


def _signer(signature: str | None) -> str | None:
    from ..core.signing import parse_signature

    return parse_signature(signature).public.fingerprint if signature else None
