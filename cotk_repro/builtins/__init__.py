"""Built-in plugins. Each module here is registered with the plugin manager exactly
like an entry-point plugin (see :data:`cotk_repro.plugins.BUILTIN_PLUGINS`).

Keep these modules cheap to import: they import their components inside the hook.
"""
