"""The owner's warm command server: runs ``gputray queue`` and its kin in a forked copy of itself.

The owner starts it (``gputray --quick-server SOCKET``, Linux only) and ends it; it ends itself too
when the owner's pipe on its stdin closes. It loads once what a command loads (msgspec, the parser of
every owner-talking command, the replies' decoders, the English reason catalogue), then waits. For each
client (``scheduler/client/quick.py``: same user, same install) it forks: the copy takes the client's
standard streams (passed as file descriptors), folder, umask, environment and command line, runs the
command as ``gputray`` would, and sends back the exit status. The server itself stays single-threaded,
so a fork never copies a lock some other thread held.

Why a fork and not the owner running the command itself: a command reads its environment, writes to
its own stdout and asks the owner over the socket, all as process-wide state; a forked copy has all of
it to itself, and a command that hangs or crashes takes no one else with it.
"""

from __future__ import annotations

import contextlib
import io
import os
import select
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from gputray.scheduler.client import quick

#: A request larger than this is refused (an environment of 128 KiB values, a few hundred of them).
MAX_REQUEST_BYTES = 16 * 1024 * 1024
Command = Callable[[list[str]], int]


def warm_up() -> None:
    """Load what the commands load, once, before any fork: each copy then starts with it all."""
    import msgspec

    from gputray.cluster.plug import CLUSTER_COMMANDS
    from gputray.scheduler.client import program
    from gputray.scheduler.client.requests import REPLY_TYPES
    from gputray.scheduler.client.words import catalogue

    for name in sorted(quick.QUICK_COMMANDS):
        program.build_parser(name, CLUSTER_COMMANDS)
    for kind in REPLY_TYPES.values():
        msgspec.json.Decoder(kind)  # the replies' type information, built once
    catalogue("en")  # the English catalogue (``render(None)`` words nothing and loaded none of it)
    _LOADED.update(_loaded_files())
    import gc

    gc.collect()
    gc.freeze()  # what is loaded stays: a copy's collections walk only its own objects (12 ms → 1 ms)


#: The files of the modules loaded at warm-up, with their size and time: where one changed (gputray or a
#: library upgraded while the owner runs), a copy would run the old code, so the client runs it itself.
_LOADED: dict[str, tuple[int, int]] = {}


def _loaded_files() -> dict[str, tuple[int, int]]:
    stamps = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str):
            with contextlib.suppress(OSError):
                st = os.stat(path)
                stamps[path] = (st.st_mtime_ns, st.st_size)
    return stamps


def _code_changed() -> bool:
    for path, stamp in _LOADED.items():
        try:
            st = os.stat(path)
        except OSError:
            return True
        if (st.st_mtime_ns, st.st_size) != stamp:
            return True
    return False


def serve(address: str, address_file: str, run: Command) -> int:
    """Listen on ``address`` until the owner's pipe (stdin) closes; ``run(argv)`` runs one command.
    Once listening, ``address_file`` names the socket for clients (``scheduler/ipc/quick_host.py``)."""
    from gputray.scheduler.client.connection import forget_quick_address, write_quick_address

    warm_up()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(address)
    old_mask = os.umask(0o177)
    try:
        listener.bind(address)
    finally:
        os.umask(old_mask)
    listener.listen(64)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the copies are reaped by the kernel
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl+C meant for the owner's terminal: the owner ends us
    signal.signal(signal.SIGTERM, _end)  # the owner's stop: through the clean-up below
    owner = sys.stdin.fileno()
    try:
        write_quick_address(Path(address_file), address)
        while True:
            readable, _, _ = select.select([listener, owner], [], [])
            if owner in readable and not os.read(owner, 4096):
                return 0  # the owner is gone, or ends us
            if listener in readable:
                _accept(listener, owner, run)
    finally:
        listener.close()
        forget_quick_address(Path(address_file), address)
        with contextlib.suppress(OSError):
            os.unlink(address)


def _end(_signum: int, _frame: object) -> None:
    raise SystemExit(0)


def _accept(listener: socket.socket, owner: int, run: Command) -> None:
    try:
        conn, _ = listener.accept()
    except OSError:
        return
    try:
        if quick.peer_uid(conn) != os.getuid():
            return
        pid = os.fork()
    except OSError:
        conn.close()  # the client runs the command itself
        return
    if pid:
        conn.close()
        return
    status = 1
    try:
        listener.close()
        os.close(owner)
        status = _child(conn, run)
    finally:
        os._exit(status)


def _child(conn: socket.socket, run: Command) -> int:
    """In the forked copy: take the client's process state, run its command, send the status."""
    for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    conn.settimeout(10.0)
    try:
        fields, fds = _receive(conn)
    except (OSError, ValueError):
        return 1
    try:
        if (
            fields[0] != quick.MAGIC
            or fields[1] != quick.install_id()
            or len(fds) != quick.STREAMS
            or _code_changed()
        ):
            conn.sendall(b"NO")
            return 1
        argv = _take_over(fields, fds)
    except (OSError, ValueError, IndexError):
        return 1
    finally:
        for fd in fds:
            os.close(fd)
    try:  # signals are passed on from the moment the client reads the pid: all that follows expects them
        conn.sendall(b"OK" + os.getpid().to_bytes(4, "big"))
        if conn.recv(len(quick.GO)) != quick.GO:
            return 1  # the client gave up waiting (and runs the command itself), or is gone
        conn.settimeout(None)
        _end_with_the_client(conn)
        status = _run(run, argv)
    except OSError:
        return 1
    except KeyboardInterrupt:  # Ctrl+C passed on as the command was about to begin
        status = _interrupted()
    with contextlib.suppress(OSError):
        conn.sendall(status.to_bytes(4, "big", signed=True))
    return status


def _receive(conn: socket.socket) -> tuple[list[bytes], list[int]]:
    data, fds, _, _ = socket.recv_fds(conn, 65536, quick.STREAMS)
    if len(data) < 4:
        raise ValueError("short request")
    size = int.from_bytes(data[:4], "big")
    if size > MAX_REQUEST_BYTES:
        raise ValueError("request too large")
    body = bytearray(data[4:])
    while len(body) < size:
        chunk = conn.recv(min(1 << 20, size - len(body)))
        if not chunk:
            raise ValueError("request cut short")
        body += chunk
    return bytes(body).split(b"\0"), list(fds)


def _take_over(fields: list[bytes], fds: list[int]) -> list[str]:
    """The client's folder, umask, streams and environment become this process's; its argv."""
    cwd, mask = fields[2], int(fields[3])
    settings = [fields[4 + 4 * i : 8 + 4 * i] for i in range(quick.STREAMS)]
    at = 4 + 4 * quick.STREAMS
    count = int(fields[at])
    argv = [os.fsdecode(a) for a in fields[at + 1 : at + 1 + count]]
    env = fields[at + 1 + count :]
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    os.chdir(cwd)
    os.umask(mask)
    os.environ.clear()
    for entry in env:
        name, sep, value = entry.partition(b"=")
        if sep and name:
            os.environb[name] = value
    time.tzset()  # local time as the client's TZ says (Python reads it once, at a start)
    streams = [_wrap(i, settings[i]) for i in range(quick.STREAMS)]
    sys.stdin, sys.stdout, sys.stderr = streams
    for dunder, stream in zip(("__stdin__", "__stdout__", "__stderr__"), streams, strict=True):
        setattr(sys, dunder, stream)  # as at a start: ``streams.open_standard_streams`` checks them
    sys.argv = ["gputray", *argv]
    return argv


def _wrap(fd: int, setting: list[bytes]) -> io.TextIOWrapper:
    """The standard stream on ``fd`` as Python makes it at a start, with the client's settings."""
    encoding, errors, line, through = (s.decode() for s in setting)
    raw = io.FileIO(fd, "rb" if fd == 0 else "wb", closefd=False)
    buffered: io.RawIOBase | io.BufferedIOBase = raw  # written through (``-u``, PYTHONUNBUFFERED): unbuffered
    if fd == 0:
        buffered = io.BufferedReader(raw)
    elif through != "1":
        buffered = io.BufferedWriter(raw)
    return io.TextIOWrapper(
        buffered,  # type: ignore[arg-type]  # a FileIO is what Python itself wraps under -u
        encoding=encoding,
        errors=errors,
        line_buffering=line == "1",
        write_through=through == "1",
    )


def _interrupted() -> int:
    print(quick.INTERRUPTED, file=sys.stderr, flush=True)
    return 130


def _end_with_the_client(conn: socket.socket) -> None:
    """A client killed outright (SIGKILL) sends no signal on: its closed socket ends the command here."""

    def watch() -> None:
        with contextlib.suppress(OSError):
            while conn.recv(4096):
                pass
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="quick-client-watch", daemon=True).start()


def _run(run: Command, argv: list[str]) -> int:
    import atexit

    try:
        status = run(argv)
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, int) and exc.code is not None:
            print(exc.code, file=sys.stderr)
    except KeyboardInterrupt:  # before the command's own handling began (``entry.main`` says this too)
        status = _interrupted()
    except BaseException:
        import traceback

        traceback.print_exc()
        status = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    return status
