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
from pathlib import Path
from typing import Any, Callable

from ..capture.git import open_repo
from ..core.config import load_config
from ..plugins import get_plugins
from ..records import RecordView, RunStore, short_id, validate_record
from ..core.signing import sign_for_publish
from ..errors import CotkError
from . import PublishError
from .targets import PublishContext


def resolve_dashboard(explicit: str | None, config) -> str | None:
    """Return the dashboard URL to publish to: the explicit one, else ``COTK_REPRO_DASHBOARD_URL``, else the
    project's, else the logged-in default."""
    from ..core import userconfig

    return (explicit or os.environ.get("COTK_REPRO_DASHBOARD_URL") or config.get("dashboard", "url")
            or userconfig.default_dashboard())


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
        return (bool(env) and userconfig.normalize_url(env) == norm) or userconfig.knows_dashboard(norm)
    except CotkError:
        return False


def _check_reproducible_from_dashboard(record: dict[str, Any], rid: str) -> None:
    """A record on the dashboard is reproduced from the git remote it names: refuse one that names none.

    A record is immutable (its id is the hash of its content), so the remote it was pushed to later cannot be
    added to it: a record made before the project had a remote must be made again.
    """
    if not RecordView.of(record).code.remote_url:
        raise PublishError(f"record {rid} names no git remote (it was made before the project had one), so a "
                           f"reproduction from the dashboard could not fetch its code",
                           hint="run it again with `cotk-repro run` now that the remote exists and publish that "
                                "record, or publish this one with --no-dashboard")


def choose_targets(explicit: list[str] | None, config, *, use_git: bool = True, use_dashboard: bool = True) -> list[str]:
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


def publish(cwd: Path, record_ref: str = "latest", *, remote: str | None = None, dashboard: str | None = None,
            use_git: bool = True, use_dashboard: bool = True, push: bool | None = None,
            targets: list[str] | None = None,
            on_status: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Publish one local record; returns ``{"id", "folder", "steps": [...], "warnings": [...]}``."""
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
        warnings.append(f"record {rid} was made from a dirty work tree: a reproduction checks out commit "
                        f"{(view.code.commit or '')[:12]} without those changes")
    signature, note = sign_for_publish(folder, record, root)
    if note:
        warnings.append(note)
    ctx = PublishContext(root=root, record=record, folder=folder, config=config, remote=remote,
                         push=bool(config.get("publish", "push") if push is None else push),
                         dashboard_url=resolve_dashboard(dashboard, config), dashboard_explicit=bool(dashboard),
                         dashboard_user_chosen=chosen_by_user(dashboard, resolve_dashboard(dashboard, config)),
                         on_status=on_status or (lambda _m: None), signature=signature)
    chosen = choose_targets(targets, config, use_git=use_git, use_dashboard=use_dashboard)
    steps: list[dict[str, Any]] = []
    if "dashboard" in chosen and ctx.dashboard_url:
        _check_reproducible_from_dashboard(record, rid)
    for name in chosen:
        if name == "dashboard" and not ctx.dashboard_url:
            steps.append({"target": "dashboard", "status": "skipped",
                          "detail": "no dashboard configured (dashboard.url, --dashboard or `cotk-repro login`)"})
            continue
        target = get_plugins().build("publish_target", name)
        try:
            steps.append(target.publish(ctx))
        except PublishError as exc:
            exc.steps = steps + exc.steps
            raise
    return {"id": view.id, "folder": str(folder), "steps": steps, "warnings": warnings,
            "signed_by": _signer(signature)}


def _signer(signature: str | None) -> str | None:
    from ..core.signing import parse_signature

    return parse_signature(signature).public.fingerprint if signature else None
