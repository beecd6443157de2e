"""The daemon fixtures of test_daemon_e2e, shared with the other e2e modules."""

from test_daemon_e2e import daemons, home  # noqa: F401
