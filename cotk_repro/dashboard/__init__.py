"""The results dashboard (docs/spec.md section 7): a FastAPI service over SQLite or PostgreSQL.

``create_app(db_url)`` builds the app; ``server.serve`` runs it with uvicorn;
``server.start_in_thread`` runs it in a background thread (demo, tests).
Importing this package is cheap: FastAPI and SQLAlchemy load on first use.
"""

from __future__ import annotations


def create_app(*args, **kwargs):
    """The dashboard's FastAPI app (:func:`cotk_repro.dashboard.app.create_app`, imported on first call)."""
    from .app import create_app as _create_app

    return _create_app(*args, **kwargs)


def start_in_thread(*args, **kwargs):
    """Serve the dashboard in a background thread (:func:`.server.start_in_thread`, imported on first call)."""
    from .server import start_in_thread as _start

    return _start(*args, **kwargs)


__all__ = ["create_app", "start_in_thread"]
