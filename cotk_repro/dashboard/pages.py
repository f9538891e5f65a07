"""HTML pages: ``/`` (tasks and datasets), ``/leaderboard``, ``/records``, ``/records/{id}``.

Jinja2 templates from ``templates/dashboard/``, through the project's one environment
(:mod:`cotk_repro.core.templating`), with autoescaping on: every
user-supplied string (project, metric and user names, stdout snippets, the
Dockerfile) is escaped. No scripts are served at all (see the CSP in ``app.py``).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from functools import lru_cache
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from ..core.ranking import TIERS
from ..records.diffing import describe_row
from ..records.view import RecordView
from . import leaderboard as lb
from . import store
from . import table as tb
from .queue import annotate_board, annotate_entries

router = APIRouter(include_in_schema=False)
QSTR = 200
PER_PAGE = 100


@lru_cache(maxsize=1)
def _env():
    """The project's Jinja environment (lenient: uploaded records may lack optional keys) with the pages' helpers."""
    from ..core.templating import environment

    env = environment(lenient=True).overlay()
    env.filters = {
        **env.filters,
        "fmt": fmt_value,  # its own dicts: the project's environments stay as they are
        "split_tiers": split_tiers,
        "when": when,
    }
    env.globals = {**env.globals, "board_url": board_url, "record_path": record_path, "entries_table": entries_table}
    return env


_TABLES: OrderedDict[Any, Any] = OrderedDict()
_TABLES_LOCK = threading.Lock()
TABLES_KEPT = 128  # at most ~70 KB each (100 entries)


def entries_table(group: dict[str, Any], metric: str, order: str = "tier"):
    """The HTML table of a leaderboard group's page of entries, rendered once per distinct content.

    A board is rebuilt after every write, but an upload that does not enter a group's page changes
    only the group's total: its table is reused (rendering was most of a rebuild's cost).
    """
    from markupsafe import Markup

    key = (
        metric,
        order,
        group.get("hash"),
        tuple(tuple(tuple(v.items()) if isinstance(v, dict) else v for v in e.values()) for e in group["entries"]),
    )
    with _TABLES_LOCK:
        found = _TABLES.get(key)
        if found is not None:
            _TABLES.move_to_end(key)
            return found
    html = Markup(render("_entries_table.html", group=group, board={"metric": metric, "order": order}))
    with _TABLES_LOCK:
        _TABLES[key] = html
        while len(_TABLES) > TABLES_KEPT:
            _TABLES.popitem(last=False)
    return html


def render(name: str, **context: Any) -> str:
    """Render ``templates/dashboard/<name>``."""
    return _env().get_template("dashboard/" + name).render(**context)


def human_time(iso: Any) -> str:
    """An ISO timestamp as people read it, in UTC: "25 Nov 2026, 18:34 UTC" (pages are cached, so never
    "3 minutes ago", which a cached page would keep saying)."""
    from datetime import datetime, timezone

    if not isinstance(iso, str) or not iso:
        return ""
    try:
        t = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return iso
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    t = t.astimezone(timezone.utc)
    return f"{t.day} {t:%b %Y, %H:%M} UTC"


def when(iso: Any):
    """A ``<time>`` element: the human time, the exact ISO time on hover (both escaped)."""
    from markupsafe import Markup, escape

    if not isinstance(iso, str) or not iso:
        return ""
    return Markup('<time datetime="{0}" title="{0}">{1}</time>').format(escape(iso), escape(human_time(iso)))


#: stands for the dashboard's own address in cached pages; each response puts the address in its place
ORIGIN_MARK = "\u2063cotk-repro-origin\u2063"


def fmt_value(v: Any) -> str:
    """A value as shown on a page: floats to 6 significant digits, None as an empty string."""
    if isinstance(v, bool) or v is None:
        return "" if v is None else str(v)
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def split_tiers(entries: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], ...]:
    """``(verified, signed, the rest)``: the entries of each tier (:mod:`cotk_repro.core.ranking`), each in rank
    order (one pass: the page of a leaderboard is rebuilt after every write)."""
    out: tuple[list[dict[str, Any]], ...] = tuple([] for _ in TIERS)
    for e in entries:
        out[min(max(int(e.get("tier", TIERS[-1])), 0), len(TIERS) - 1)].append(e)
    return out


def board_url(task: str, dataset: str, metric: str | None = None) -> str:
    """The path of the leaderboard page of a task / dataset (and metric; without one, the side-by-side table)."""
    q = {"task": task, "dataset": dataset}
    if metric is not None:
        q["metric"] = metric
    return "/leaderboard?" + urlencode(q)


def record_path(record_id: str) -> str:
    """The path of a record's page."""
    return "/records/" + quote(record_id, safe=":")


def _html(text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(text, status_code=status)


def _error(status: int, message: str) -> HTMLResponse:
    return _html(render("error.html", status=status, message=message), status)


def _ok_name(v: str | None) -> bool:
    return v is None or ("\x00" not in v and len(v) <= QSTR)


_SCP = re.compile(r"^(?:[^@/:]+@)?(?P<host>[A-Za-z0-9.-]+\.[A-Za-z]{2,}):(?P<path>[\w.-]+/[\w./-]+)$")


def commit_link(remote_url: Any, commit: Any) -> str | None:
    """A web link to the commit for http(s) and scp-like (git@host:user/repo) remotes; None otherwise."""
    if not isinstance(remote_url, str) or not isinstance(commit, str) or not re.fullmatch(r"[0-9a-f]{7,64}", commit):
        return None
    url = remote_url.strip()
    m = _SCP.match(url)
    if m and "://" not in url:
        url = f"https://{m.group('host')}/{m.group('path')}"
    if not url.startswith(("https://", "http://")):
        return None
    url = url.rstrip("/")
    if url.endswith(".git"):
        url = url[:-4]
    return f"{url}/commit/{commit}"


def _s(v: Any) -> str:
    return "" if v is None else str(v)


def _remote_of(recorded: Any, publication: Any) -> Any:
    """The remote a reproducer fetches the record's code from: the record's own, or, for a record made before its
    project had one (none, or only ``local:NAME``), the one its stored publication names."""
    from ..remote.publication import takes_publication

    inner = publication.get("publication") if isinstance(publication, dict) else None
    published = inner.get("remote_url") if isinstance(inner, dict) else None
    return published if isinstance(published, str) and published and takes_publication(recorded) else recorded


def _tolerance_words(row: dict[str, Any]) -> str:
    """``exact`` / ``rtol 1e-05, atol 1e-08`` as judged, and what the upload asked for where it was more."""
    from ..records.tolerances import describe

    def num(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    if not (num(row.get("rtol")) and num(row.get("atol"))):
        return ""
    words = describe(row["rtol"], row["atol"])
    asked = [f"{k} {row[f'claimed_{k}']:g}" for k in ("rtol", "atol") if num(row.get(f"claimed_{k}"))]
    if asked:
        words += f" (the upload asked for {', '.join(asked)}; judged here with the metric's declared tolerance)"
    return words


def record_view(data: dict[str, Any]) -> dict[str, Any]:
    """Everything the record page shows, from a stored record (tolerant of odd shapes)."""
    view = RecordView.of(data["record"])
    project, code, env, command = view.project, view.code, view.environment, view.command
    remote_url = _remote_of(code.remote_url, data.get("publication"))
    results = []
    for name, r in sorted(view.results.items()):
        results.append(
            {
                "name": name,
                "value": r.value,
                "hash": r.hash,
                "signature": r.signature,
                "metric": r.metric,
                "version": r.version,
                "pinned": view.pinned(name),
                "ci": r.ci,
                "board": board_url(_s(project.task), _s(project.dataset), name),
            }
        )
    repros = []
    for rep in data["reproductions"]:
        v = rep["verdict"]
        rows = [m for m in v.get("metrics", []) if isinstance(m, dict)] if isinstance(v.get("metrics"), list) else []
        rows = [{**m, "how": describe_row(m), "tolerance": _tolerance_words(m)} for m in rows]
        diffs = (
            [x for x in v.get("environment_differences", []) if isinstance(x, dict)]
            if isinstance(v.get("environment_differences"), list)
            else []
        )
        repros.append(
            {
                "id": rep["id"],
                "user": rep["user"],
                "submitted_at": rep["submitted_at"],
                "verdict": _s(v.get("verdict")),
                "runtime": _s(v.get("runtime")),
                "metrics": rows,
                "diffs": diffs,
                "error": v.get("error"),
                "version": _s(v.get("cotk_repro_version")),
                "claimed": _s(v.get("claimed_verdict")),
                "by_author": bool(rep.get("by_author")),
                "superseded": bool(rep.get("superseded")),
                "signed": bool(rep.get("signed")),
                "key": rep.get("key"),
            }
        )
    return {
        "id": view.id,
        "status": _s(view.status),
        "error": view.error,
        "user": data["user"],
        "submitted_at": data["submitted_at"],
        "signed": bool(data.get("signed")),
        "key": data.get("key"),
        "mirrored_by": data.get("mirrored_by") or [],
        "project": {"name": _s(project.name), "task": _s(project.task), "dataset": _s(project.dataset)},
        "code": {
            "commit": _s(code.commit),
            "branch": _s(code.branch),
            "remote_url": _s(remote_url),
            "dirty": bool(code.dirty),
            "link": commit_link(remote_url, code.commit),
        },
        "command": {
            "entry": command.entry,
            "args": command.args,
            "cwd": command.cwd,
            "started_at": command.started_at,
            "duration_s": command.duration_s,
            "exit_status": command.exit_status,
        },
        "python": f"{_s(env.python_implementation)} {_s(env.python_version)}".strip(),
        "platform": " ".join(_s(env.platform.get(k)) for k in ("system", "release", "machine")).strip(),
        "cotk_repro_version": _s(env.cotk_repro_version or view.cotk_repro_version),
        "packages": env.packages,
        "plugins": env.plugins,
        "accelerators": env.accelerators,
        "dockerfile": env.dockerfile,
        "dockerfile_sha256": _s(env.dockerfile_sha256),
        "data": view.data,
        "results": results,
        "reproductions": repros,
        "reproduced_by": store.reproduced_by(data["reproductions"]),
        "queue": data.get("queue"),
        "standing": data.get("standing"),
    }


@lru_cache(maxsize=1)
def _robots() -> bytes:
    from ..core.templating import templates_dir

    return (templates_dir() / "dashboard" / "robots.txt").read_bytes()


@router.get("/robots.txt")
async def robots() -> Response:
    """A static file (also the floor the load benchmark compares uploads and leaderboards with)."""
    return Response(_robots(), media_type="text/plain; charset=utf-8")


@router.get("/", response_class=HTMLResponse)
async def home(request: Request):
    """The home page: every task and dataset, and the 10 newest records."""
    dash = request.app.state.dashboard

    def compute() -> bytes:
        catalogue = dash.db.read(lb.catalogue)
        recent = store.list_records(dash.db, page=1, per_page=10)["records"]
        return render("home.html", catalogue=catalogue, recent=recent).encode()

    return Response(await dash.cached_async(("home-page",), compute), media_type="text/html; charset=utf-8")


@router.get("/leaderboard", response_class=HTMLResponse)
async def leaderboard_page(
    request: Request,
    task: str = Query(""),
    dataset: str = Query(""),
    metric: str | None = Query(None),
    page: int = Query(1, ge=1, le=100_000),
    reproduced: bool = Query(False),
    sort: str | None = Query(None),
    order: str = Query("tier", pattern="^(tier|value)$"),
):
    """The leaderboard page of one metric, or without ``metric`` every metric side by side; ``order=value``
    ranks by value alone, tiers ignored (each entry keeps its badges)."""
    if not all(_ok_name(v) for v in (task, dataset, metric, sort)):
        return _error(400, "the task, dataset or metric is not a valid name")
    dash = request.app.state.dashboard

    def compute() -> bytes:
        if metric is None and not task and not dataset:  # no board named: the tasks and datasets to choose from
            return render("home.html", catalogue=dash.db.read(lb.catalogue), recent=[]).encode()
        if metric is None:  # every metric side by side, each column linking to its leaderboard
            table = dash.db.read(
                lambda conn: tb.build(conn, task, dataset, sort=sort, limit=PER_PAGE, page=page, record_url=record_path)
            )
            annotate_entries(dash.db, table["rows"])  # "verified by <pool>" where the reproduction queue runs
            here = board_url(task, dataset) + (f"&sort={quote(sort, safe='')}" if sort else "")
            nav = {
                "prev": (here + f"&page={page - 1}") if page > 1 else None,
                "next": (here + f"&page={page + 1}") if table["total"] > page * PER_PAGE else None,
            }
            return render("metrics.html", task=task, dataset=dataset, table=table, nav=nav).encode()
        board = dash.db.read(
            lambda conn: lb.build(
                conn,
                task,
                dataset,
                metric,
                limit=PER_PAGE,
                page=page,
                record_url=record_path,
                reproduced_only=reproduced,
                by_value=order == "value",
            )
        )
        annotate_board(dash.db, board)  # "verified by <pool>" where the reproduction queue runs
        more = any(g["total"] > page * PER_PAGE for g in board["groups"])
        here = (
            board_url(task, dataset, metric)
            + ("&reproduced=1" if reproduced else "")
            + ("&order=value" if order == "value" else "")
        )
        nav = {
            "prev": (here + f"&page={page - 1}") if page > 1 else None,
            "next": (here + f"&page={page + 1}") if more else None,
            "all": board_url(task, dataset, metric),
            "reproduced": board_url(task, dataset, metric) + "&reproduced=1",
            "by_value": board_url(task, dataset, metric) + "&order=value",
        }
        return render("leaderboard.html", board=board, nav=nav).encode()

    body = await dash.cached_async(
        ("leaderboard-page", task, dataset, metric, page, reproduced, sort, order), compute, stale_ok=True
    )
    return Response(body, media_type="text/html; charset=utf-8")


@router.get("/records", response_class=HTMLResponse)
def records_page(
    request: Request,
    task: str | None = Query(None),
    dataset: str | None = Query(None),
    user: str | None = Query(None),
    page: int = Query(1, ge=1, le=100_000),
):
    """The list of records, newest first, filtered by task, dataset or user."""
    if not all(_ok_name(v) for v in (task, dataset, user)):
        return _error(400, "the task, dataset or user is not a valid name")
    dash = request.app.state.dashboard
    data = dash.cached(
        ("records-page", task, dataset, user, page),
        lambda: store.list_records(dash.db, task=task, dataset=dataset, user=user, page=page, per_page=50),
    )
    q = {k: v for k, v in (("task", task), ("dataset", dataset), ("user", user)) if v is not None}
    nav = {
        "prev": "/records?" + urlencode({**q, "page": page - 1}) if page > 1 else None,
        "next": "/records?" + urlencode({**q, "page": page + 1}) if page < data["pages"] else None,
    }
    return _html(render("records.html", data=data, filters=q, nav=nav))


@router.get("/users/{name}", response_class=HTMLResponse)
def user_page(request: Request, name: str):
    """A user: their SSH keys with fingerprints, and a link to their records."""
    from .identity import list_keys

    if not _ok_name(name):
        return _error(400, "the user is not a valid name")
    dash = request.app.state.dashboard
    keys = dash.cached(("user-keys", name), lambda: list_keys(dash.db, name))
    return _html(render("user.html", user=name, keys=keys, records="/records?" + urlencode({"user": name})))


@router.get("/records/{record_id}", response_class=HTMLResponse)
async def record_page(request: Request, record_id: str):
    """A record's page: its results, signature and reproductions; 404 when there is no such record."""
    dash = request.app.state.dashboard
    rid = store.normalize_id(record_id)
    if rid is None:  # nothing cached for what is not an id
        return _error(404, f"{record_id[:100]!r} is not a record id")

    def compute() -> tuple[int, bytes]:
        try:
            data = store.get_record(dash.db, rid)
        except store.NotFound as exc:
            return 404, render("error.html", status=404, message=exc.message).encode()
        return 200, render("record.html", r=record_view(data), origin=ORIGIN_MARK).encode()

    # keyed on the normalised id: random-case spellings of one id share one entry
    status, body = await dash.cached_async(("record-page", rid), compute)
    # the page is cached once for every address it is served under: this response's own goes in here, escaped
    # (a Host header is the requester's own; it never reaches the cache)
    from markupsafe import escape

    body = body.replace(ORIGIN_MARK.encode(), str(escape(dash.base_url(request))).encode())
    return Response(body, status_code=status, media_type="text/html; charset=utf-8")
