"""Write docs/queue.md's table of task keys from their declarations (``scheduler/tasks/keys.py``).

    python tools/task_keys_table.py          # print the table
    python tools/task_keys_table.py --write  # put it in docs/queue.md, between its two markers

``tests/scheduler/tasks/test_task_keys.py`` fails while the docs hold another table than this one.
"""

from __future__ import annotations

import sys
from pathlib import Path

from gputray.scheduler.tasks.keys import docs_table

DOC = Path(__file__).resolve().parent.parent / "docs" / "queue.md"
BEGIN = "<!-- task keys: written by tools/task_keys_table.py from scheduler/tasks/keys.py -->\n"
END = "<!-- end of the task keys -->\n"


def with_table(text: str) -> str:
    """``text`` (docs/queue.md) with the table between the markers replaced by today's."""
    head, begin, rest = text.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise SystemExit(f"{DOC}: the markers {BEGIN.strip()} and {END.strip()} are missing")
    return head + BEGIN + docs_table() + END + tail


def main() -> int:
    if "--write" in sys.argv[1:]:
        DOC.write_text(with_table(DOC.read_text(encoding="utf-8")), encoding="utf-8")
    else:
        sys.stdout.write(docs_table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
