"""The reproduction fleet end to end with the real Docker runtime (docs/fleet.md).

A project is published, signed, to a git remote served by ``git daemon`` (a URL a worker can fetch;
a path remote is recorded only as ``local:NAME``); its signed records are uploaded to a queue-enabled
dashboard database of this test's own on the test PostgreSQL server; a real ``cotk-repro dashboard worker``
process (the CLI, Docker runtime, base image ``COTK_REPRO_TEST_BASE_IMAGE``) reproduces them: the record
whose entry works gets one pool reproduction, verdict reproduced, signed by the pool's key; the record
whose entry crashes ends failed with its one-sentence reason. Before the pool, a volunteer (issue 47: another
user, over HTTP, ``dashboard worker --url --once``) reproduces the same record in Docker and verifies it.
Expected values come from
``expected_values()``, computed from the project's inputs independently of cotk-repro.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from conftest import git, run_cli
from fleet_support import own_database, stop, wait_for
from signing_support import key_env, make_key
from test_reproduce_support import (
    add_bare_remote,
    expected_values,
    record_in,
    remote_served_by_git_daemon,
    reproduce_project,
    seeded_cache,
    small_venv_python,
)

from cotk_repro.core.signing import key_from_path, sign_record
from cotk_repro.dashboard import queue, store
from cotk_repro.dashboard.auth import Principal, add_user
from cotk_repro.dashboard.db import open_database
from cotk_repro.dashboard.identity import add_key
from cotk_repro.reproduce.engine import list_images

# slow: Docker reproductions of one record (a volunteer's over HTTP, then the pool's) and of a crashing one
pytestmark = [pytest.mark.docker, pytest.mark.slow]
pytest.importorskip(
    "procrastinate", reason="the fleet's queue needs procrastinate (pip install 'cotk-repro[postgres]')"
)


def test_a_worker_reproduces_an_uploaded_record_in_docker_and_signs_it(tmp_path, docker_base_image):
    alice_key, pool_key = make_key(tmp_path / "alice-keys"), make_key(tmp_path / "pool-keys")
    py = small_venv_python()
    root = reproduce_project(tmp_path / "work" / "proj")
    # a tree of this test's own: a reproduction image is named by the tree, the environment and the base image, and
    # tests/test_reproduce_docker.py reproduces the same project on the same base image, maybe at the same time
    (root / "fleet.txt").write_text("the fleet's copy\n", encoding="utf-8")
    git(root, "add", "fleet.txt")
    git(root, "commit", "-q", "-m", "the fleet's copy")
    bare = add_bare_remote(root, tmp_path / "remotes", "alice/proj")
    env = key_env(alice_key, tmp_path / "alice-home")
    # the workers keep the image they build (reproduce.image_cache of their user config): the volunteer builds it,
    # and the pool's two reproductions of that one environment, tree and base image take it from the cache. Their
    # cache folder is this test's own (seeded with the user cache's wheels), so that the images it holds are known
    # and removed at the end (forget_images), and its image cache counts no other test's images
    workers_config = tmp_path / "workers-config"
    workers_config.mkdir()
    (workers_config / "config.json").write_text('{"reproduce": {"image_cache": 16}}', encoding="utf-8")
    cache = seeded_cache(tmp_path / "workers-cache")
    workers_env = {**os.environ, "COTK_REPRO_CONFIG_DIR": str(workers_config), "COTK_REPRO_CACHE": str(cache)}
    with remote_served_by_git_daemon(root, bare, tmp_path / "remotes") as git_url, own_database("docker") as url:
        ok = record_in(root, py)
        crash = record_in(root, py, None, "--", "crash")
        assert ok["code"]["remote_url"] == git_url
        for i, rec in enumerate((ok, crash)):
            res = run_cli("publish", "--no-dashboard", rec["id"], *(["--push"] if i == 0 else []), cwd=root, env=env)
            assert res.returncode == 0, res
        git(root, "push", "-q", "origin", "refs/heads/main")
        db = open_database(url)
        queue.start(db)
        for name, key in (("alice", alice_key), ("verifier", pool_key)):
            add_user(db, name)
            add_key(db, name, key.with_suffix(".pub").read_text())
        alice = Principal(user_id=1, name="alice")
        signing = key_from_path(alice_key, "test")
        for rec in (ok, crash):
            assert store.store_record(db, {"record": rec, "signature": sign_record(rec, signing)}, alice)[0]
        _a_volunteer_reproduces_it_in_docker_over_http(db, url, ok, tmp_path, docker_base_image, workers_env)
        log = tmp_path / "worker.log"
        with open(log, "wb") as out:
            worker = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "cotk_repro",
                    "dashboard",
                    "worker",
                    "--db",
                    url,
                    "--key",
                    str(pool_key),
                    "--base-image",
                    docker_base_image,
                    "--max-attempts",
                    "1",
                    "--timeout",
                    "600",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=workers_env,
                start_new_session=True,
            )
        try:
            state = lambda rid: db.read(lambda c: queue.record_state(c, rid))  # noqa: E731
            wait_for(
                lambda: (
                    state(ok["id"])["state"] in ("done", "failed") and state(crash["id"])["state"] in ("done", "failed")
                ),
                900,
                every=2,
                what="both jobs to finish\n" + (log.read_text(errors="replace")[-3000:] if log.exists() else ""),
            )
            got = store.get_record(db, ok["id"])
            pool = [r for r in got["reproductions"] if r["user"] == "verifier"]
            assert len(pool) == 1, log.read_text(errors="replace")[-3000:]
            verdict = pool[0]["verdict"]
            assert verdict["verdict"] == "reproduced" and pool[0]["signed"] and verdict["runtime"] == "docker"
            assert verdict["record_id"] == ok["id"]
            rerun = {k: v["value"] for k, v in verdict["rerun"]["results"].items()}
            assert rerun == pytest.approx(expected_values("ok"))
            assert got["queue"]["verified_by"] == "verifier"
            failed = state(crash["id"])
            assert failed["state"] == "failed" and failed["attempts"] == 1
            assert failed["reason"].startswith("could not run: ") and "\n" not in failed["reason"]
            assert store.get_record(db, crash["id"])["reproductions"] == []
        finally:
            try:
                assert stop(worker, signal.SIGTERM, timeout=120) == 0, log.read_text(errors="replace")[-3000:]
            finally:
                db.dispose()
                forget_images(cache)


def forget_images(cache) -> None:
    """Remove the reproduction images the workers kept: those whose environment their cache folder holds."""
    import docker

    client = docker.from_env(timeout=120)
    try:
        for env in (cache / "images").glob("*.json"):
            for image in list_images(client, filters={"label": f"cotk-repro.key={env.stem}"}):
                try:
                    client.images.remove(image.id)
                except Exception:
                    pass
    finally:
        client.close()


def _a_volunteer_reproduces_it_in_docker_over_http(db, url: str, ok: dict, tmp_path, base_image: str, env) -> None:
    """Issue 47: a volunteer (another user, its own key, no database access) leases the record over HTTP with
    the real CLI (``dashboard worker --url --once``), reproduces it in Docker as the pool does, and its signed
    verdict verifies the record (K = 1)."""
    from cotk_repro.dashboard.server import start_in_thread

    bob_key = make_key(tmp_path / "bob-keys")
    token = add_user(db, "bob")[0]
    add_key(db, "bob", bob_key.with_suffix(".pub").read_text())
    http, stop_http = start_in_thread(url, reproduce_queue=True, rate_limit=None)
    try:
        vol = subprocess.run(
            [sys.executable, "-m", "cotk_repro", "dashboard", "worker", "--url", http, "--token", token,
             "--key", str(bob_key), "--base-image", base_image, "--timeout", "600", "--once"],
            capture_output=True, text=True, timeout=900, env=env,
        )  # fmt: skip
    finally:
        stop_http()
    assert vol.returncode == 0, vol.stderr[-3000:]
    got = store.get_record(db, ok["id"])
    [bobs] = [r for r in got["reproductions"] if r["user"] == "bob"]
    assert bobs["signed"] and bobs["verdict"]["verdict"] == "reproduced" and bobs["verdict"]["runtime"] == "docker", (
        bobs["verdict"],
        vol.stdout[-3000:],
        vol.stderr[-3000:],
    )
    rerun = {k: v["value"] for k, v in bobs["verdict"]["rerun"]["results"].items()}
    assert rerun == pytest.approx(expected_values("ok"))
    assert got["standing"] == "verified"
