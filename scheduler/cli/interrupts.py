"""Ctrl+C while the owner answers a request that changes the queue.

Once ``submit`` has sent its files, the owner queues all of them or none, whatever the client does
next: a Ctrl+C that ended the client then left the user not knowing that 1,000 tasks were queued. So
the first Ctrl+C waits for the answer, which says what was done, and a second one stops waiting.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Iterator
from types import FrameType


@contextlib.contextmanager
def answer_awaited(doing: str) -> Iterator[list[int]]:
    """Within: the first Ctrl+C is noted (in the list yielded) and said on stderr instead of raised;
    the second raises KeyboardInterrupt. ``doing``: what the owner is doing ("queueing the files")."""
    pressed: list[int] = []

    def on_interrupt(signum: int, frame: FrameType | None) -> None:
        if pressed:
            raise KeyboardInterrupt
        pressed.append(signum)
        print(
            f"gputray: interrupted while the owner was {doing}: waiting for its answer to say what was "
            "done (Ctrl+C again stops waiting)",
            file=sys.stderr,
            flush=True,
        )

    try:
        previous = signal.signal(signal.SIGINT, on_interrupt)
    except ValueError:  # not the main thread (a test calling in): Ctrl+C is not ours to take
        yield pressed
        return
    try:
        yield pressed
    finally:
        signal.signal(signal.SIGINT, previous)
