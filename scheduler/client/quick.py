"""The quick way to run a command: hand it to the owner's warm command server (issue 31 item 6).

A ``gputray queue`` that loads msgspec, argparse and the reason catalogues pays ~60 ms before it says a
word, on every call; scripts call it in loops. Beside a running owner (Linux) waits a warm command
server (``gui/quick_server.py``): a process that has loaded all of that once and forks a copy of itself
for each command. This module is the other end, and loads only what the standard library starts with
(``os``, ``sys``, ``_socket`` and ``_signal``; not ``socket`` and ``signal``, whose ``enum`` and
``selectors`` cost more than the rest of this side together): it sends the command line, the folder,
the umask, the environment and the three standard streams themselves (their file descriptors, passed
over the Unix socket), so the forked copy runs the command exactly as this process would, writing
straight to this terminal or pipe. It answers with the command's exit status; Ctrl+C and the other
ending signals are passed on to it, and Ctrl+Z stops it with this process.

Where there is no such server (no owner, Windows, another install of gputray, ``GPUTRAY_QUICK=0``)
``run`` returns None before anything was sent that could run, and the command runs here as always.
"""

from __future__ import annotations

import _socket
import os
import sys

from gputray.scheduler import paths_cache

TYPE_CHECKING = False  # not typing's: importing typing costs more than this whole side (mypy knows the name)
if TYPE_CHECKING:  # typeshed knows signal, whose functions and numbers _signal has (without enum)
    import signal as _signal
else:
    import _signal

#: The commands that talk to the owner and may run in the warm server (not ``daemon``, not the tray, not
#: the cluster's own commands, whose bridge needs Ray).
QUICK_COMMANDS = frozenset(
    {
        "queue", "status", "submit", "run", "edit", "move", "cancel", "retry", "remove", "clean",
        "pause", "resume", "pause-job", "resume-job", "logs", "wait", "schedule", "residents",
        "free-resident",
    }
)  # fmt: skip
#: In the owner's data folder: the server's socket path, written once it listens.
ADDRESS_FILE = "quick.address"
MAGIC = b"gputray-quick-1"
#: What ``gputray`` says when Ctrl+C comes before its command began (in its own process or the copy).
INTERRUPTED = "gputray: interrupted before the command began: nothing was done"
#: The client's word that it waits for the status: the command runs only after it, so a client that
#: timed out and runs the command itself never has it run twice.
GO = b"GO"
HANDOVER_TIMEOUT_S = 5.0
#: The signals passed on to the command (it handles them as it would here: Ctrl+C ends it with 130).
FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT")
STREAMS = 3


#: The interpreter's flags that change what a command does (not ``dont_write_bytecode``: it does not).
FLAGS = ("isolated", "no_site", "no_user_site", "ignore_environment", "dev_mode", "utf8_mode", "optimize")


def install_id() -> bytes:
    """Which gputray and Python this is: the server runs a command only for a client that would run the
    same code the same way. Its code, its environment's prefix, the Python, the flags that matter, the
    group and supplementary groups (after ``newgrp`` or ``sg`` the command opens files with other
    rights), and the module path past its first entry (the script's folder, or the folder ``-m`` ran
    in): a client whose PYTHONPATH puts a stand-in module first runs its commands itself (``python3``
    and ``python`` of one venv are one install)."""
    here = os.path.dirname(os.path.abspath(__file__))
    flags = ",".join(str(getattr(sys.flags, name)) for name in FLAGS)
    groups = f"{os.getgid()}:{','.join(str(g) for g in sorted(os.getgroups()))}"
    parts = [here, sys.prefix, sys.version, flags, sys.getfilesystemencoding(), groups, *sys.path[1:]]
    return b"|".join(os.fsencode(p) for p in parts)


def data_folder() -> str | None:
    """The data folder without platformdirs or pathlib (``paths.app_paths``'s answer, where it is known)."""
    home = os.environ.get("GPUTRAY_HOME")
    if home:
        return os.path.join(os.path.realpath(os.path.expanduser(home)), "data")
    known = paths_cache.recall()
    return None if known is None else known[1]


def server_address() -> str | None:
    """The warm server's socket, if its address file is ours and no one else can write it."""
    folder = data_folder()
    if folder is None:
        return None
    try:
        fd = os.open(os.path.join(folder, ADDRESS_FILE), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if st.st_uid != os.getuid() or st.st_mode & 0o022:
            return None
        text = os.read(fd, 4096).decode("utf-8", "surrogateescape")
    except OSError:
        return None
    finally:
        os.close(fd)
    address = text.rstrip("\n")
    return address if address.startswith("/") and "\n" not in address else None


def peer_uid(sock: _socket.socket) -> int:
    """The uid of the process at the other end (Linux's SO_PEERCRED: pid, uid, gid as three ints)."""
    creds = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
    return int.from_bytes(creds[4:8], sys.byteorder)


def stream_settings(stream: object) -> bytes:
    """How Python wrapped one standard stream here (the server wraps it the same way)."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    errors = getattr(stream, "errors", None) or "strict"
    line = "1" if getattr(stream, "line_buffering", False) else "0"
    through = "1" if getattr(stream, "write_through", False) else "0"
    return f"{encoding}\0{errors}\0{line}\0{through}".encode()


def request(argv: list[str]) -> bytes:
    """Everything the command depends on in this process, NUL-separated (no argument, variable or path
    holds a NUL on POSIX), after a 4-byte length."""
    mask = os.umask(0)
    os.umask(mask)
    fields = [
        MAGIC,
        install_id(),
        os.getcwdb(),
        str(mask).encode(),
        *(stream_settings(s) for s in (sys.stdin, sys.stdout, sys.stderr)),
        str(len(argv)).encode(),
        *(os.fsencode(a) for a in argv),
        *(k + b"=" + v for k, v in os.environb.items()),
    ]
    body = b"\0".join(fields)
    return len(body).to_bytes(4, "big") + body


def _read_exactly(sock: _socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


def run(argv: list[str]) -> int | None:
    """Run ``argv`` (``["queue", "--json"]``) in the warm server; its exit status, or None where it was
    not handed over (then nothing of it ran: the caller runs it itself)."""
    if not argv or argv[0] not in QUICK_COMMANDS or not sys.platform.startswith("linux"):
        return None
    if os.environ.get("GPUTRAY_QUICK", "1") == "0" or "-h" in argv or "--help" in argv:
        return None
    if any(s is None for s in (sys.stdin, sys.stdout, sys.stderr)):
        return None  # a closed standard stream: said in words by the full path
    address = server_address()
    if address is None:
        return None
    signals = _Forwarder()  # from before the request leaves: a Ctrl+C meanwhile reaches the command
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        try:
            sock.settimeout(HANDOVER_TIMEOUT_S)
            sock.connect(address)
            if peer_uid(sock) != os.getuid():
                signals.not_handed_over()
                return None
            data = request(argv)
            fds = b"".join(fd.to_bytes(4, sys.byteorder) for fd in range(STREAMS))  # C ints
            sent = sock.sendmsg([data], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
            sock.sendall(data[sent:])
            answer = _read_exactly(sock, 6)
            if len(answer) != 6 or answer[:2] != b"OK":
                signals.not_handed_over()  # refused (another install) or gone before it ran anything
                return None
            sock.sendall(GO)  # only now does it run: a client that gave up waiting never sends this
        except OSError:
            signals.not_handed_over()
            return None
        signals.pass_to(int.from_bytes(answer[2:], "big"))
        return _wait_for_status(sock, signals)
    finally:
        sock.close()


class _Forwarder:
    """The ending signals, passed on to the command's process once it is known; until then kept."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.received: list[int] = []
        # a signal this process ignores (``nohup``) stays ignored: it was never the command's to get
        handlers = {name: self._on_signal for name in FORWARDED}
        handlers["SIGTSTP"] = self._on_ctrl_z
        self.before = {
            name: _signal.signal(getattr(_signal, name), handler)
            for name, handler in handlers.items()
            if _signal.getsignal(getattr(_signal, name)) is not _signal.SIG_IGN
        }

    def _on_signal(self, signum: int, _frame: object) -> None:
        self.received.append(signum)
        if self.pid is not None:
            self._send(signum)

    def _on_ctrl_z(self, signum: int, _frame: object) -> None:
        """Ctrl+Z stops the command with this process, and ``fg`` or ``bg`` goes on with both. SIGSTOP,
        not SIGTSTP: the copy's process group has no terminal, so the kernel would drop a SIGTSTP."""
        self._send(_signal.SIGSTOP)
        _signal.signal(_signal.SIGTSTP, _signal.SIG_DFL)
        os.kill(os.getpid(), _signal.SIGTSTP)  # this process stops here, as the shell expects
        _signal.signal(_signal.SIGTSTP, self._on_ctrl_z)
        self._send(_signal.SIGCONT)

    def _send(self, signum: int) -> None:
        if self.pid is None:
            return
        try:  # noqa: SIM105 (contextlib costs this side ~2 ms)
            os.kill(self.pid, signum)
        except OSError:  # it has just ended
            pass

    def pass_to(self, pid: int) -> None:
        self.pid = pid
        for signum in self.received:
            self._send(signum)

    def not_handed_over(self) -> None:
        """Nothing ran there: the handlers as they were, and a signal that came meanwhile delivered here."""
        for name, handler in self.before.items():
            _signal.signal(getattr(_signal, name), handler)
        for signum in self.received[:1]:
            _signal.raise_signal(signum)

    def end_like_the_command(self) -> None:
        """The command's process ended by a signal passed on (SIGTERM): this one ends by it too."""
        if self.received:
            _signal.signal(self.received[-1], _signal.SIG_DFL)
            os.kill(os.getpid(), self.received[-1])


def _wait_for_status(sock: _socket.socket, signals: _Forwarder) -> int:
    """The command runs in its own process now: wait for its status. A signal it did not catch
    (SIGTERM) ends this process the same way, as the shell would have seen it."""
    sock.settimeout(None)
    try:
        status = _read_exactly(sock, 4)
    except OSError:
        status = b""
    if len(status) == 4:
        return int.from_bytes(status, "big", signed=True)
    signals.end_like_the_command()
    print("gputray: the command's process ended without its exit status (killed?)", file=sys.stderr)
    return 1
