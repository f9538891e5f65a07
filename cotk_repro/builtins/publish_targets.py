"""Built-in publish targets: ``git`` (records ref + code on a remote) and ``dashboard`` (record upload).

The factories import their implementation lazily so that loading the plugin stays cheap.
"""

from ..hookspecs import hookimpl


def git_target():
    """Build the publish target that pushes run records to a git repository."""
    from ..publish.targets import GitTarget

    return GitTarget()


def dashboard_target():
    """Build the publish target that uploads run records to a dashboard server."""
    from ..publish.targets import DashboardTarget

    return DashboardTarget()


@hookimpl
def register_publish_targets(register):
    """Register the built-in `git` and `dashboard` publish targets."""
    register("git", git_target)
    register("dashboard", dashboard_target)
