"""The built-in publish targets ``git`` and ``dashboard`` (registered in ``builtins/publish_targets.py``).

A publish target is ``factory() -> target`` with ``name`` and
``publish(ctx: PublishContext) -> dict`` (one step of the publish report:
``{"target", "status", ...}``); it raises :class:`PublishError` on failure. A target may also have
``preflight(ctx)``: called for every chosen target before any target publishes, it raises PublishError for
what would fail later, so that nothing is sent anywhere (the dashboard: its token and the signing key).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..capture.git import strip_credentials
from ..core.config import ProjectConfig
from ..core.git import GitError, git, out, rev_parse
from ..records import RecordView, short_id
from ..remote.gitrecords import DEFAULT_REF, add_to_ref, record_files, record_path
from . import PublishError

TMP_REMOTE_REF = "refs/cotk-repro/remote-records"


@dataclass
class PublishContext:
    """What a publish target gets: the record, its folder, the project config, remote and dashboard."""

    root: Path
    record: dict[str, Any]
    folder: Path
    config: ProjectConfig
    remote: str | None = None
    push: bool = False
    dashboard_url: str | None = None
    dashboard_explicit: bool = False
    #: the user named the dashboard (not only the project's committed config): an environment token may go there
    dashboard_user_chosen: bool = False
    on_status: Callable[[str], None] = lambda _m: None
    #: the record's armored SSH signature (``record.sig``), None when published unsigned
    signature: str | None = None
    #: the record's publication (``{"publication", "signature"}``: the git remote taken at publish time, for a
    #: record made before the project had one; :mod:`cotk_repro.remote.publication`), None when it needs none
    publication: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def remote_name(remote: str | None, config) -> str:
    """The git remote publish uses: ``--remote``, else ``publish.remote``, else ``origin``."""
    return remote or config.get("publish", "remote") or "origin"


def _ls_remote(root: Path, remote: str, shown: str) -> dict[str, str]:
    """ref -> sha on the remote (its own credentials: helpers, SSH agent)."""
    try:
        text = out(root, "ls-remote", "--", remote, what=f"git ls-remote {remote}", timeout=120)
    except GitError as exc:
        raise PublishError(
            f"cannot reach the git remote {remote!r} ({shown})",
            log=exc.log,
            hint="check the URL and your credentials (git credential helper or SSH key)",
        ) from None
    refs = {}
    for line in text.splitlines():
        sha, _, ref = line.partition("\t")
        if ref:
            refs[ref] = sha
    return refs


def commit_on_remote(root: Path, remote: str, commit: str, refs: dict[str, str]) -> str | None:
    """The remote branch that contains ``commit``, or None."""
    heads = {ref: sha for ref, sha in refs.items() if ref.startswith("refs/heads/") and ref != DEFAULT_REF}
    missing = [sha for sha in set(heads.values()) if rev_parse(root, sha) is None]
    if missing:  # the remote has commits we lack: fetch them (only FETCH_HEAD is written)
        git(root, "fetch", "-q", "--no-tags", "--", remote, *sorted(missing), check=False, timeout=600)
    for ref, sha in sorted(heads.items()):
        if sha == commit:
            return ref
    for ref, sha in sorted(heads.items()):
        if (
            rev_parse(root, sha)
            and git(root, "merge-base", "--is-ancestor", "--end-of-options", commit, sha, check=False).returncode == 0
        ):
            return ref
    return None


class GitTarget:
    """Push the recorded commit (with ``--push``) and the records ref to a git remote."""

    name = "git"

    def publish(self, ctx: PublishContext) -> dict[str, Any]:
        from .github import maybe_create

        root, record = ctx.root, RecordView.of(ctx.record)  # validated by publish before any target runs
        rid = record.id or ""
        remote = remote_name(ctx.remote, ctx.config)
        ref = ctx.config.get("publish", "records_ref") or DEFAULT_REF
        if not ref.startswith("refs/"):
            ref = "refs/heads/" + ref
        proc = git(root, "remote", "get-url", "--", remote, check=False)
        if proc.returncode != 0:
            raise PublishError(
                f"this repository has no git remote named {remote!r}",
                hint=f"add one with `git remote add {remote} URL`, pass --remote NAME, or --no-git",
            )
        url = proc.stdout.decode().strip()
        shown = strip_credentials(url, remote) or url
        github = maybe_create(
            url,
            configured_api=ctx.config.get("publish", "github_api"),
            private=bool(ctx.config.get("publish", "github_private")),
        )
        if os.environ.get("GITHUB_TOKEN"):
            from .github import api_base, ignored_project_api

            note = ignored_project_api(ctx.config.get("publish", "github_api"), api_base())
            if note:
                ctx.on_status(note)
        if github == "created":
            ctx.on_status(f"created the GitHub repository for {shown}")

        commit, branch = record.code.commit or "", record.code.branch
        ctx.on_status(f"checking that commit {commit[:12]} is on {remote}")
        refs = _ls_remote(root, remote, shown)
        on = commit_on_remote(root, remote, commit, refs)
        code_status = f"on {on.removeprefix('refs/heads/')}" if on else None
        if on is None:
            if not ctx.push:
                what = f"git push {remote} {branch}" if branch else f"git push {remote} {commit}:refs/heads/BRANCH"
                raise PublishError(
                    f"commit {commit[:12]} of record {short_id(rid)} is not on the remote {remote!r} ({shown})",
                    hint=f"push it with `{what}`, or rerun `cotk-repro publish --push`",
                )
            if not branch:
                raise PublishError(
                    f"record {short_id(rid)} was made on a detached HEAD, so there is no branch to push",
                    hint=f"push commit {commit[:12]} to a branch yourself: git push {remote} {commit}:refs/heads/BRANCH",
                )
            local = rev_parse(root, f"refs/heads/{branch}")
            contains = (
                local
                and git(root, "merge-base", "--is-ancestor", "--end-of-options", commit, local, check=False).returncode
                == 0
            )
            src = f"refs/heads/{branch}" if contains else commit
            ctx.on_status(f"pushing {branch} to {remote}")
            try:
                git(root, "push", "-q", "--", remote, f"{src}:refs/heads/{branch}", what=f"git push {remote} {branch}")
            except GitError as exc:
                raise PublishError(f"pushing branch {branch} to {remote!r} failed", log=exc.log) from None
            code_status = f"pushed {branch}"

        # the records ref: build on top of the remote's copy (another machine may have published)
        merge_with = []
        if ref in refs:
            git(
                root,
                "fetch",
                "-q",
                "--no-tags",
                "--",
                remote,
                f"+{ref}:{TMP_REMOTE_REF}",
                what="git fetch (records ref)",
            )
            merge_with = [TMP_REMOTE_REF]
        try:
            files = {
                f"{record_path(rid)}/{name}": data
                for name, data in record_files(ctx.folder, logs=bool(ctx.config.get("publish", "logs"))).items()
            }
            update = add_to_ref(
                root, ref, files, merge_with=merge_with, message=f"cotk-repro record {rid}\n\ncommit {commit}\n"
            )
            if refs.get(ref) == update.commit:
                status = "up to date"
            else:
                ctx.on_status(f"pushing {ref} to {remote}")
                try:
                    git(root, "push", "-q", "--", remote, f"{ref}:{ref}", what=f"git push {remote} {ref}")
                except GitError as exc:
                    raise PublishError(
                        f"pushing the records ref {ref} to {remote!r} failed",
                        log=exc.log,
                        hint="rerun `cotk-repro publish`; the local record is unchanged",
                    ) from None
                status = "pushed"
        finally:
            if merge_with:
                git(root, "update-ref", "-d", TMP_REMOTE_REF, check=False)
        return {
            "target": "git",
            "status": status,
            "remote": remote,
            "url": shown,
            "ref": ref,
            "records_commit": update.commit,
            "code": code_status,
            "github": github,
        }


class DashboardTarget:
    """Upload the record to a dashboard (``POST /api/v1/records``)."""

    name = "dashboard"

    def preflight(self, ctx: PublishContext) -> None:
        """Before any target sends anything: a token is there and, for a signed record, the dashboard knows its
        key as the token's user's, so that a git push is never followed by the dashboard's refusal (a half
        publish). An unreachable dashboard is not asked (the upload then reports it and says how to retry)."""
        from ..core.signing import parse_signature
        from ..remote.dashboard import DashboardClient, DashboardError

        url, token = self._token(ctx)
        if ctx.signature is None:  # the dashboard was said to take unsigned records (--allow-unsigned)
            return
        fingerprint = parse_signature(ctx.signature).public.fingerprint
        client = DashboardClient(url, token, retries=1)
        try:
            user = client.whoami()
            keys = {k.get("fingerprint"): k for k in client.user_keys(user)}
        except DashboardError as exc:
            if exc.unreachable or exc.status == 404:
                return
            raise PublishError(f"{exc.message}; nothing was published", hint=exc.hint) from None
        key = keys.get(fingerprint)
        if key is None:
            why = "is not registered to"
        elif key.get("revoked_at"):
            why = "was revoked for"
        elif key.get("proof") is None:
            why = "was registered without proof of possession for"
        else:
            return
        rid = short_id(RecordView.of(ctx.record).id or "")
        raise PublishError(
            f"the key {fingerprint} that signs record {rid} {why} {user} on the dashboard at {url}, which would "
            "refuse the record, so nothing was published",
            hint="register the key with `cotk-repro keys add`, then publish again (or publish with --no-dashboard)",
        )

    def _token(self, ctx: PublishContext) -> tuple[str, str]:
        """The dashboard's URL and the token sent to it; PublishError when there is none to send."""
        from ..core import userconfig

        url = userconfig.normalize_url(ctx.dashboard_url or "")
        token = userconfig.dashboard_token(url, user_chosen=ctx.dashboard_user_chosen)
        if not token and os.environ.get("COTK_REPRO_DASHBOARD_TOKEN"):
            raise PublishError(
                f"the dashboard {url} is named only by the project's cotk-repro.toml, and "
                "COTK_REPRO_DASHBOARD_TOKEN is sent only to a dashboard you chose, so nothing was "
                "uploaded",
                hint=f"pass --dashboard {url}, set COTK_REPRO_DASHBOARD_URL, or run "
                f"`cotk-repro login --dashboard {url}`",
            )
        if not token:
            raise PublishError(
                f"no token for the dashboard {url}",
                hint=f"run `cotk-repro login --dashboard {url} --token TOKEN`, or pass --no-dashboard",
            )
        return url, token

    def publish(self, ctx: PublishContext) -> dict[str, Any]:
        from ..remote.dashboard import DashboardClient, DashboardError

        url, token = self._token(ctx)
        ctx.on_status(f"uploading the record to {url}")
        try:
            client = DashboardClient(url, token)
            answer = client.upload_record(ctx.record, signature=ctx.signature)
            if ctx.publication is not None:
                ctx.on_status(f"uploading the record's git remote {ctx.publication['publication']['remote_url']}")
                client.upload_publication(ctx.record["id"], ctx.publication)
        except DashboardError as exc:
            retry = f"`cotk-repro publish {short_id(RecordView.of(ctx.record).id or '')} --no-git`"
            raise PublishError(
                f"{exc.message}; the record is kept locally in {ctx.folder}",
                hint=f"register your signing key with `cotk-repro keys add`, then retry with {retry}"
                if exc.status == 403
                else f"retry later with {retry}" + (f"; {exc.hint}" if exc.hint else ""),
            ) from None
        return {
            "target": "dashboard",
            "status": "uploaded" if answer["created"] else "already there",
            "url": answer.get("url"),
            "dashboard": url,
        }
