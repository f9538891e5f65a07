"""``cotk-repro publish``: the record's commit and the record to the git remote, then the dashboard.

Idempotent: publishing the same record twice changes nothing the second time. A
failure never touches the local record (``.cotk-repro/runs/<hex>/``), and its
message says how to retry.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ..capture.git import open_repo
from ..config import load_config
from ..plugins import get_component
from ..records import RunStore, short_id, validate_record
from . import PublishError
from .targets import PublishContext


def resolve_dashboard(explicit: str | None, config) -> str | None:
    from .. import userconfig

    return explicit or config.get("dashboard", "url") or userconfig.default_dashboard()


def _check_reproducible_from_dashboard(record: dict[str, Any], rid: str) -> None:
    """A record on the dashboard is reproduced from the git remote it names: refuse one that names none.

    A record is immutable (its id is the hash of its content), so the remote it was pushed to later cannot be
    added to it: a record made before the project had a remote must be made again.
    """
    if not (record.get("code") or {}).get("remote_url"):
        raise PublishError(f"record {rid} names no git remote (it was made before the project had one), so a "
                           f"reproduction from the dashboard could not fetch its code",
                           hint="run it again with `cotk-repro run` now that the remote exists and publish that "
                                "record, or publish this one with --no-dashboard")


def publish(cwd: Path, record_ref: str = "latest", *, remote: str | None = None, dashboard: str | None = None,
            use_git: bool = True, use_dashboard: bool = True, push: bool | None = None,
            on_status: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Publish one local record; returns ``{"id", "folder", "steps": [...], "warnings": [...]}``."""
    repo = open_repo(Path(cwd))
    root = Path(repo.working_tree_dir)
    config = load_config(root)
    store = RunStore(root)
    folder = store.resolve(record_ref)
    record = validate_record(store.load_folder(folder), f"record {folder.name[:12]}")
    rid = short_id(record["id"])
    if record.get("status") != "ok":
        raise PublishError(f"record {rid} is marked {record.get('status')}; only successful records can be published")
    warnings = []
    if record["code"].get("dirty"):
        warnings.append(f"record {rid} was made from a dirty work tree: a reproduction checks out commit "
                        f"{record['code']['commit'][:12]} without those changes")
    ctx = PublishContext(root=root, record=record, folder=folder, config=config, remote=remote,
                         push=bool(config.get("publish", "push") if push is None else push),
                         dashboard_url=resolve_dashboard(dashboard, config), dashboard_explicit=bool(dashboard),
                         on_status=on_status or (lambda _m: None))
    if not use_git and not use_dashboard:
        raise PublishError("nothing to publish to: both --no-git and --no-dashboard were given")
    steps: list[dict[str, Any]] = []
    targets = (["git"] if use_git else []) + (["dashboard"] if use_dashboard and ctx.dashboard_url else [])
    if "dashboard" in targets:
        _check_reproducible_from_dashboard(record, rid)
    for name in targets:
        target = get_component("publish_target", name)()
        try:
            steps.append(target.publish(ctx))
        except PublishError as exc:
            exc.steps = steps + exc.steps
            raise
    if use_dashboard and not ctx.dashboard_url:
        steps.append({"target": "dashboard", "status": "skipped",
                      "detail": "no dashboard configured (dashboard.url, --dashboard or `cotk-repro login`)"})
    return {"id": record["id"], "folder": str(folder), "steps": steps, "warnings": warnings}
