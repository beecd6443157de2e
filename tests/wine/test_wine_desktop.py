"""Windows desktop integration under Wine: where files live (%LOCALAPPDATA%, %APPDATA%), and Send To as a
real .lnk that Windows' own ``start`` follows."""

from __future__ import annotations

import json
import shutil
import struct
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath

from waiting import wait_for
from winpython import Owner, WinePython, winpath

SHELL_LINK_CLSID = bytes.fromhex("0114020000000000c000000000000046")


def linux_path(win: WinePython, windows: str) -> Path:
    """Where a Windows path of the prefix (C:\\users\\…) or of drive Z: lies on this machine."""
    pure = PureWindowsPath(windows)
    drive = pure.drive.upper()
    rest = Path(*pure.parts[1:])
    if drive == "Z:":
        return Path("/") / rest
    assert drive == "C:", windows
    return win.prefix / "drive_c" / rest


def known_folders(win: WinePython) -> dict[str, str]:
    names = ("LOCALAPPDATA", "APPDATA")
    doc = win.value(f"import json, os; print(json.dumps({{k: os.environ[k] for k in {names}}}))")
    assert isinstance(doc, dict)
    return {str(k): str(v) for k, v in doc.items()}


def test_config_data_and_logs_live_under_localappdata(win: WinePython) -> None:
    local = known_folders(win)["LOCALAPPDATA"]
    mine = linux_path(win, local) / "gputray"
    shutil.rmtree(mine, ignore_errors=True)  # the prefix is cached between runs
    doc = win.value(
        "import json; from gputray.scheduler.paths import app_paths; p = app_paths()\n"
        "names = ('config_file', 'queue_db', 'logs_dir', 'state_dir')\n"
        "print(json.dumps({k: str(getattr(p, k)) for k in names}))"
    )
    assert isinstance(doc, dict)
    for name, path in doc.items():
        assert PureWindowsPath(path).is_relative_to(PureWindowsPath(local) / "gputray"), (name, path)

    owner = Owner(win, None, "--demo")
    try:
        echo = ["cmd", "/c", "echo", "from the default home"]
        done = win.gputray("run", "--device", "cpu", "--", *echo, home=None)
        assert done.returncode == 0, done.text
        wait_for(lambda: "from the default home" in win.gputray("logs", "1", home=None).stdout, 60, "the log")
        added = win.gputray("envs", "add", win.python_exe, "--name", "embedded 3.13", home=None)
        assert added.returncode == 0, added.text
    finally:
        owner.stop()
    for name in ("config_file", "queue_db", "logs_dir"):
        assert linux_path(win, doc[name]).exists(), name
    assert (linux_path(win, doc["queue_db"]).parent / "ipc.key").stat().st_size == 32
    assert "embedded 3.13" in linux_path(win, doc["config_file"]).read_text("utf-8")
    assert (linux_path(win, doc["state_dir"]) / "daemon.log").exists()


@dataclass(frozen=True)
class Link:
    base_path: str
    working_dir: str
    arguments: str


def parse_lnk(data: bytes) -> Link:
    """The parts of a Shell Link file ([MS-SHLLINK]) Explorer uses to start it, read independently of Wine."""
    header_size, clsid, flags = struct.unpack_from("<I16sI", data, 0)
    assert header_size == 0x4C and clsid == SHELL_LINK_CLSID, "not a Shell Link file"
    has_idlist, has_info, unicode = flags & 0x1, flags & 0x2, flags & 0x80
    offset = header_size
    if has_idlist:
        offset += 2 + struct.unpack_from("<H", data, offset)[0]
    base = ""
    if has_info:
        info_size, info_header, _flags, _volume, base_offset = struct.unpack_from("<5I", data, offset)
        if info_header >= 0x24:  # the Unicode form is there too
            (unicode_offset,) = struct.unpack_from("<I", data, offset + 28)
            end = data.index(b"\0\0", offset + unicode_offset)
            base = data[offset + unicode_offset : end + 1].decode("utf-16-le")
        else:
            end = data.index(b"\0", offset + base_offset)
            base = data[offset + base_offset : end].decode("cp1252", "replace")
        offset += info_size
    strings: dict[str, str] = {}
    for bit, name in ((0x4, "name"), (0x8, "relative"), (0x10, "working_dir"), (0x20, "arguments")):
        if flags & bit:
            (count,) = struct.unpack_from("<H", data, offset)
            size = count * (2 if unicode else 1)
            raw = data[offset + 2 : offset + 2 + size]
            # [MS-SHLLINK] counts no terminator; Wine 8 writes and counts one, so drop it
            strings[name] = raw.decode("utf-16-le" if unicode else "latin-1").removesuffix("\0")
            offset += 2 + size
    return Link(base, strings.get("working_dir", ""), strings.get("arguments", ""))


def test_send_to_is_a_real_link_that_queues_the_files(win: WinePython, home: Path, tmp_path: Path) -> None:
    appdata = known_folders(win)["APPDATA"]
    link = PureWindowsPath(appdata) / "Microsoft" / "Windows" / "SendTo" / "gputray.lnk"
    linux_path(win, str(link)).unlink(missing_ok=True)
    installed = win.gputray("--install-send-to", home=home)
    assert installed.returncode == 0, installed.text
    assert installed.stdout.strip() == f"installed {link}"

    parsed = parse_lnk(linux_path(win, str(link)).read_bytes())
    pythonw = PureWindowsPath(win.pythonw_exe)
    assert PureWindowsPath(parsed.base_path) == pythonw  # no gputrayw.exe here: its equivalent
    assert parsed.arguments == "-m gputray.gui.entry"
    assert PureWindowsPath(parsed.working_dir) == pythonw.parent
    shell = win.value(
        "import json; from pathlib import Path; from gputray.gui.windows_shortcut import read_shortcut\n"
        f"s = read_shortcut(Path({str(link)!r})); print(json.dumps([s.target, s.arguments]))"
    )
    assert shell == [str(pythonw), "-m gputray.gui.entry"]  # as the Windows shell reads it

    # Explorer's Send To starts the link with the chosen files; Windows' `start` does the same
    folder = tmp_path / "送る files"
    folder.mkdir()
    script = folder / "学習 script (1).py"
    script.write_text("print('hello from Send To')\n", "utf-8")
    owner = Owner(win, home, "--demo")
    try:
        started = win.run_windows(
            "start", "/wait", str(link), winpath(script), env={"GPUTRAY_HOME": winpath(home)}, timeout_s=120
        )
        assert started.returncode == 0, started.text

        def queued() -> list[dict[str, object]]:
            listed = win.gputray("queue", "--all", "--json", home=home)
            return list(json.loads(listed.stdout)["tasks"]) if listed.returncode == 0 else []

        (task,) = wait_for(queued, 60, "the file handed over by the Send To link")
        assert task["name"] == "学習 script (1).py", task
        # A .py file is a torch job, run in the folder it was sent from; this Windows Python has no
        # torch, so it waits, saying what to do (running it is the Linux suite's: tests/scheduler)
        assert task["kind"] == "torch" and task["cwd"] == winpath(folder), task
        wait_for(lambda: state_of(win, home) == "waiting", 60, "the owner to say why the job waits")
        (waiting,) = queued()
        assert "gputray envs add" in str(waiting["reason"]), waiting
    finally:
        owner.stop()


def state_of(win: WinePython, home: Path) -> str:
    listed = win.gputray("queue", "--all", "--json", home=home)
    return str(json.loads(listed.stdout)["tasks"][0]["state"])
