"""Running one task as a process: its argv and environment variables (``invocation``), the launcher, the
supervisor between owner and job, and the Windows job object that stands in for a process group."""
