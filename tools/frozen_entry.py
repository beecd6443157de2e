"""The entry script PyInstaller freezes into ``gputray`` / ``gputray.exe`` / ``gputrayw.exe``.

A frozen build has no Python to start for the jobs' supervisor or the Vulkan worker: gputray starts its
own executable with ``--gputray-run-path``/``--gputray-run-module`` instead (``monitor/interpreter.py``),
and this entry runs that script or module. Anything else is the ordinary ``gputray`` command line;
``gputrayw.exe`` (the same entry, built without a console) starts the tray, as pip's ``gputrayw`` does.
"""

from __future__ import annotations

import sys
from pathlib import Path

from gputray.monitor.interpreter import run_if_asked


def main() -> int:
    if run_if_asked(sys.argv):
        return 0
    from gputray.gui import entry

    if Path(sys.executable).stem.lower() == "gputrayw":
        return entry.main_windowed()
    return entry.main()


if __name__ == "__main__":
    sys.exit(main())
