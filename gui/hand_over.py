"""A second launch hands its files to the gputray that already owns the queue (and exits), instead of
starting a second owner. Used at start-up (``app.main``) and when another launch won the race to own
the queue while this one was starting (``tray_app``)."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

log = logging.getLogger("gputray.gui")


def hand_over(files: Sequence[str]) -> int | None:
    """If an owner answers, give it the files and return an exit code; None when nobody answers."""
    from gputray.scheduler.client import connection as ipc
    from gputray.scheduler.client import requests as rq
    from gputray.scheduler.client.connection import app_paths

    paths = app_paths()
    try:
        with ipc.IpcClient(paths, timeout_s=30.0) as client:
            pong = client.ask(rq.Ping())
            if not files:
                print(f"gputray is already running (pid {pong.pid}).")
                return 0
            absolute = [str(Path(f).expanduser().absolute()) for f in files]
            try:
                result = client.ask(rq.OpenFiles(files=absolute, cwd=os.getcwd()))
            except ipc.RemoteError as exc:
                print(f"gputray: {exc}", file=sys.stderr)
                return 1
            if result.handed_to == "tray":
                print(f"gave {len(absolute)} file(s) to the running gputray: confirm the jobs there.")
            for task in result.tasks:
                print(f"queued #{task.id}: {task.name}")
            return 0
    except ipc.OwnerNotRunning:
        return None
    except ipc.IpcError as exc:
        log.warning("the running gputray did not answer properly (%s); starting our own", exc)
        return None
