"""Alembic environment for the dashboard, configured programmatically (no alembic.ini).

:func:`cotk_repro.dashboard.db.upgrade` passes an open connection in
``config.attributes["connection"]``; offline (``--sql``) mode uses ``sqlalchemy.url``.
"""

from alembic import context

from cotk_repro.dashboard.models import Base

config = context.config
connection = config.attributes.get("connection")

if connection is None:  # offline: emit SQL for the configured URL
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=Base.metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    context.configure(
        connection=connection, target_metadata=Base.metadata, render_as_batch=connection.dialect.name == "sqlite"
    )
    with context.begin_transaction():
        context.run_migrations()
