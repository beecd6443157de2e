"""Worker: ``python -m gputray.monitor.vulkan_enum`` prints the Vulkan enumeration as one JSON object.

Runs in its own process so a crashing or hanging Vulkan driver only takes this process down. Drivers and
layers may print to stdout (Mesa's device-select does), so the real stdout is set aside first and
everything else is sent to stderr; the JSON goes to the saved descriptor.
"""

from __future__ import annotations

import json
import os
import sys

from gputray.monitor.vulkan import to_json
from gputray.monitor.vulkan_loader import enumerate_in_process


def main() -> int:
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)  # anything a driver prints now lands on stderr
    enum = enumerate_in_process()
    payload = json.dumps(to_json(enum)).encode("ascii") + b"\n"
    with os.fdopen(saved, "wb") as out:
        out.write(payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
