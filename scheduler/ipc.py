"""The owner's local socket: how the CLI and a second launch talk to the one process that owns the queue.

Transport
    * Unix: an ``AF_UNIX`` stream socket ``owner.sock`` in a 0700 directory ``ipc/`` under
      ``app_paths().runtime_dir``; the socket file is 0600 and the server checks the peer's uid
      (``SO_PEERCRED``) where the kernel offers it. Socket paths are limited to ~107 bytes; when
      the runtime dir is too deep, the socket moves to ``/tmp/gputray-<uid>-<hash>/`` (created 0700,
      refused unless it is ours). A flock on ``owner.lock`` next to the socket plus a connect-first
      check keep a second owner from silently replacing a live one (Qt's ``UserAccessOption`` would):
      only a socket that refuses connections while nobody holds the lock is unlinked.
    * Windows: a named pipe through ``multiprocessing.connection`` (Python has no ``AF_UNIX`` on
      Windows). Each pipe instance is created with a DACL that admits only this user's SID
      (``win_pipe.py``; multiprocessing's default DACL would let every local user open it), and every
      connection must also pass the HMAC challenge with a 32-byte key kept in the user's data dir
      (``ipc.key``, which only the user can read). A second owner is refused because the first pipe
      instance is created with ``FILE_FLAG_FIRST_PIPE_INSTANCE`` and because we connect first. Only
      ``send_bytes``/``recv_bytes`` are used: never ``recv()``, which unpickles.

Frames
    A request or reply is one JSON object, UTF-8. On the Unix socket each frame is a 4-byte big-endian
    length then the payload; on the pipe ``multiprocessing`` frames the bytes itself. Frames over
    ``MAX_FRAME_BYTES`` (1 MiB) get an error reply and the connection is closed. Replies come from the
    trusted owner and may be larger (``queue`` of 10,000 tasks is ~2.5 MB): the client accepts up to
    ``MAX_REPLY_BYTES``.

Requests are ``{"op": NAME, "args": {...}}``; replies ``{"ok": true, "result": {...}}`` or
``{"ok": false, "error": {"type": ..., "message": ...}}``. Every request is checked against ``OPS``
(known op, known argument names, argument types and sizes) before a handler sees it, so garbage gets
an error reply and never reaches the queue.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import math
import os
import socket
import struct
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from gputray.scheduler.paths import Paths

log = logging.getLogger("gputray.ipc")

PROTOCOL_VERSION = 1
MAX_FRAME_BYTES = 1 << 20
MAX_REPLY_BYTES = 256 << 20
MAX_STR_CHARS = 32_768
MAX_LIST_ITEMS = 10_000
SOCKET_NAME = "owner.sock"
LOCK_NAME = "owner.lock"
AUTHKEY_NAME = "ipc.key"
_UNIX_PATH_MAX = 104  # sun_path is 108 on Linux, 104 on the BSDs/macOS; keep a margin
_HEADER = struct.Struct(">I")

HOW_TO_START = "start the tray app (`gputray`) or `gputray daemon`"


class RawJson(str):
    """A handler's result that is already JSON text (an object), sent as it is.

    The owner keeps each task's JSON and joins them for ``queue``: encoding 10,000 task dicts again
    for every listing would cost more than the listing itself.
    """


class IpcError(Exception):
    """Base of everything this module raises."""


class OwnerNotRunning(IpcError):
    def __init__(self, detail: str = "") -> None:
        message = f"no gputray owner is running: {HOW_TO_START}"
        super().__init__(f"{message} ({detail})" if detail else message)


class OwnerAlreadyRunning(IpcError):
    pass


class UnsafeIpcLocation(IpcError):
    """The socket directory exists but belongs to someone else or is not a plain directory."""


class ProtocolError(IpcError):
    """The other side sent something that is not a valid frame or reply."""


class BadRequest(IpcError):
    """A request that fails validation; the server replies with this message."""


class RemoteError(IpcError):
    """The owner answered with an error; ``kind`` is its type name (``TaskNotFound``, ``BadRequest`` ...)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


# --------------------------------------------------------------------------------------------------
# Request validation

ArgKind = Literal["str", "int", "bool", "str_list", "id", "id_list", "dict"]


@dataclass(frozen=True)
class Arg:
    kind: ArgKind
    required: bool = False
    nullable: bool = True


OPS: dict[str, dict[str, Arg]] = {
    "ping": {},
    "status": {},
    "submit": {
        "task_file": Arg("str"),
        "spec": Arg("dict"),
        "overrides": Arg("dict"),
        "cwd": Arg("str"),
        "caller_env": Arg("dict"),  # the CLI's os.environ: the job starts from it
    },
    "submit_files": {
        "files": Arg("str_list", required=True, nullable=False),
        "recipe": Arg("str"),
        "overrides": Arg("dict"),
        "cwd": Arg("str"),
        "caller_env": Arg("dict"),
    },
    "open_files": {  # "Open with", "Send To", a second launch: like a drop on the running app
        "files": Arg("str_list", required=True, nullable=False),
        "cwd": Arg("str"),
    },
    "run": {
        "argv": Arg("str_list", required=True, nullable=False),
        "name": Arg("str"),
        "overrides": Arg("dict"),
        "cwd": Arg("str"),
        "caller_env": Arg("dict"),
    },
    "queue": {"all": Arg("bool")},
    "get": {"id": Arg("id", required=True, nullable=False)},
    "cancel": {"ids": Arg("id_list", required=True, nullable=False)},
    "retry": {"id": Arg("id", required=True, nullable=False)},
    "move": {
        "id": Arg("id", required=True, nullable=False),
        "delta": Arg("int", required=True, nullable=False),
    },
    "pause": {"device": Arg("str")},
    "resume": {"device": Arg("str")},
    "logs": {
        "id": Arg("id", required=True, nullable=False),
        "offset": Arg("int"),
        "max_bytes": Arg("int"),
    },
    "schedule_add": {
        "cron": Arg("str", required=True, nullable=False),
        "task_file": Arg("str", required=True, nullable=False),
        "overrides": Arg("dict"),
        "name": Arg("str"),
        "cwd": Arg("str"),
    },
    "schedule_list": {},
    "schedule_remove": {"id": Arg("id", required=True, nullable=False)},
    "shutdown": {},
}


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_str(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise BadRequest(f"argument {name!r} must be a string, not {_json_type(value)}")
    if len(value) > MAX_STR_CHARS:
        raise BadRequest(f"argument {name!r} is too long ({len(value)} characters, at most {MAX_STR_CHARS})")
    if "\x00" in value:
        raise BadRequest(f"argument {name!r} contains a NUL character")
    return value


def _check_id(name: str, value: object) -> int | str:
    if _is_int(value):
        assert isinstance(value, int)
        if value < 0 or value > 2**63 - 1:
            raise BadRequest(f"argument {name!r} is out of range")
        return value
    if isinstance(value, str) and 0 < len(value) <= 64 and value.isprintable():
        return value
    raise BadRequest(f"argument {name!r} must be a task id (a number), not {_json_type(value)}")


def _check_json_value(name: str, value: object, depth: int = 0) -> None:
    """Overrides and specs: plain JSON scalars, short lists and flat tables only."""
    if depth > 4:
        raise BadRequest(f"argument {name!r} is nested too deeply")
    if value is None or isinstance(value, bool | str) or _is_int(value):
        if isinstance(value, str):
            _check_str(name, value)
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise BadRequest(f"argument {name!r} must be a finite number")
        return
    if isinstance(value, list):
        if len(value) > MAX_LIST_ITEMS:
            raise BadRequest(f"argument {name!r} has too many items")
        for item in value:
            _check_json_value(name, item, depth + 1)
        return
    if isinstance(value, dict):
        if len(value) > 256:
            raise BadRequest(f"argument {name!r} has too many keys")
        for key, item in value.items():
            _check_str(name, key)
            _check_json_value(f"{name}.{key}", item, depth + 1)
        return
    raise BadRequest(f"argument {name!r} has an unsupported value")


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _check_arg(name: str, spec: Arg, value: object) -> object:
    if value is None:
        if spec.nullable and not spec.required:
            return None
        raise BadRequest(f"argument {name!r} must not be null")
    if spec.kind == "str":
        return _check_str(name, value)
    if spec.kind == "int":
        if not _is_int(value):
            raise BadRequest(f"argument {name!r} must be an integer, not {_json_type(value)}")
        assert isinstance(value, int)
        if abs(value) > 2**53:
            raise BadRequest(f"argument {name!r} is out of range")
        return value
    if spec.kind == "bool":
        if not isinstance(value, bool):
            raise BadRequest(f"argument {name!r} must be true or false, not {_json_type(value)}")
        return value
    if spec.kind in ("str_list", "id_list"):
        if not isinstance(value, list):
            raise BadRequest(f"argument {name!r} must be a list, not {_json_type(value)}")
        if not value:
            raise BadRequest(f"argument {name!r} must not be empty")
        if len(value) > MAX_LIST_ITEMS:
            raise BadRequest(f"argument {name!r} has too many items (at most {MAX_LIST_ITEMS})")
        if spec.kind == "str_list":
            return [_check_str(name, item) for item in value]
        return [_check_id(name, item) for item in value]
    if spec.kind == "id":
        return _check_id(name, value)
    if spec.kind == "dict":
        if not isinstance(value, dict):
            raise BadRequest(f"argument {name!r} must be an object, not {_json_type(value)}")
        _check_json_value(name, value)
        return value
    raise BadRequest(f"argument {name!r} has an unknown kind")  # pragma: no cover - OPS is static


def validate_request(request: object) -> tuple[str, dict[str, Any]]:
    """Check a decoded request against ``OPS``; return (op, args) or raise BadRequest."""
    if not isinstance(request, dict):
        raise BadRequest(f"a request must be a JSON object, not {_json_type(request)}")
    unknown_top = set(request) - {"op", "args", "v"}
    if unknown_top:
        raise BadRequest(f"unknown request field(s): {', '.join(sorted(map(str, unknown_top)))[:200]}")
    op = request.get("op")
    if not isinstance(op, str):
        raise BadRequest("a request needs an 'op' string")
    if op not in OPS:
        raise BadRequest(f"unknown op {op[:64]!r}; known: {', '.join(sorted(OPS))}")
    raw_args = request.get("args", {})
    if raw_args is None:
        raw_args = {}
    if not isinstance(raw_args, dict):
        raise BadRequest(f"'args' must be an object, not {_json_type(raw_args)}")
    specs = OPS[op]
    unknown = set(raw_args) - set(specs)
    if unknown:
        names = ", ".join(sorted(map(str, unknown)))[:200]
        raise BadRequest(f"op {op!r} takes no argument(s) {names}; it takes: {', '.join(specs) or 'none'}")
    args: dict[str, Any] = {}
    for name, spec in specs.items():
        if name not in raw_args:
            if spec.required:
                raise BadRequest(f"op {op!r} needs the argument {name!r}")
            continue
        args[name] = _check_arg(name, spec, raw_args[name])
    return op, args


# --------------------------------------------------------------------------------------------------
# Frames


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


def encode_payload(obj: Mapping[str, Any], *, limit: int = MAX_FRAME_BYTES) -> bytes:
    data = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
    if len(data) > limit:
        raise ProtocolError(f"message too large ({len(data)} bytes, at most {limit})")
    return data


def decode_payload(data: bytes) -> object:
    """JSON → object; anything malformed (bad UTF-8, bad JSON, NaN, absurd nesting) raises BadRequest."""
    try:
        text = data.decode("utf-8")
        return json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise BadRequest("message is nested too deeply") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadRequest(f"message is not valid JSON: {str(exc)[:200]}") from None


def encode_frame(obj: Mapping[str, Any]) -> bytes:
    data = encode_payload(obj)
    return _HEADER.pack(len(data)) + data


class FrameTooLarge(IpcError):
    pass


def _recv_exact(sock: socket.socket, size: int) -> bytes | None:
    """``size`` bytes, or None on a clean EOF before the first byte."""
    chunks: list[bytes] = []
    remaining = size
    while remaining:
        chunk = sock.recv(min(remaining, 1 << 16))
        if not chunk:
            if remaining == size:
                return None
            raise ProtocolError("connection closed in the middle of a message")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_frame(sock: socket.socket, limit: int = MAX_FRAME_BYTES) -> bytes | None:
    header = _recv_exact(sock, _HEADER.size)
    if header is None:
        return None
    (length,) = _HEADER.unpack(header)
    if length > limit:
        raise FrameTooLarge(f"message too large ({length} bytes, at most {limit})")
    if length == 0:
        return b""
    data = _recv_exact(sock, length)
    if data is None:
        raise ProtocolError("connection closed in the middle of a message")
    return data


def error_reply(kind: str, message: str) -> dict[str, Any]:
    return {"ok": False, "error": {"type": kind, "message": message}}


# --------------------------------------------------------------------------------------------------
# Where the socket lives


def is_windows() -> bool:
    return sys.platform == "win32"


def socket_dir(paths: Paths) -> Path:
    """The 0700 directory holding the socket; a short /tmp fallback when the path would be too long."""
    preferred = paths.runtime_dir / "ipc"
    if len(os.fsencode(preferred / SOCKET_NAME)) <= _UNIX_PATH_MAX:
        return preferred
    digest = hashlib.sha256(os.fsencode(paths.runtime_dir)).hexdigest()[:16]
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path("/tmp") / f"gputray-{uid}-{digest}"


def socket_path(paths: Paths) -> Path:
    return socket_dir(paths) / SOCKET_NAME


def pipe_name(paths: Paths, user: str | None = None) -> str:
    """The Windows pipe name: per user and per data dir, so GPUTRAY_HOME owners never meet."""
    if user is None:
        user = os.environ.get("USERNAME") or os.environ.get("USER") or "user"
    digest = hashlib.sha256(f"{user.lower()}\x00{paths.data_dir}".encode()).hexdigest()[:24]
    return rf"\\.\pipe\gputray-{digest}"


Transport = Literal["auto", "unix", "pipe"]


def _resolve_transport(transport: Transport) -> Literal["unix", "pipe"]:
    """``auto`` → a named pipe on Windows, a Unix socket elsewhere (server and client must agree)."""
    if transport == "auto":
        return "pipe" if is_windows() else "unix"
    return transport


def _pipe_endpoint(paths: Paths, address: str | None, family: str | None) -> tuple[str, str]:
    """The pipe transport's (address, family); off Windows it runs over AF_UNIX (tests)."""
    return address or pipe_name(paths), family or ("AF_PIPE" if is_windows() else "AF_UNIX")


def authkey_path(paths: Paths) -> Path:
    return paths.data_dir / AUTHKEY_NAME


def load_authkey(path: Path, *, create: bool) -> bytes:
    """The pipe's shared secret; created with 32 random bytes (mode 0600 where modes exist)."""
    try:
        key = path.read_bytes()
        if len(key) >= 16:
            return key
        if not create:
            raise OwnerNotRunning(f"the key file {path} is damaged")
    except FileNotFoundError:
        if not create:
            raise OwnerNotRunning(f"no key file at {path}") from None
    except OSError as exc:  # a folder that cannot exist (GPUTRAY_HOME=C:\a|b), no access: say which file
        if not create:
            raise OwnerNotRunning(f"cannot read the key file {path}: {exc.strerror or exc}") from None
        raise
    path.parent.mkdir(parents=True, exist_ok=True)
    key = os.urandom(32)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    # O_BINARY: Windows opens in text mode by default and would write each 0x0A byte of the key as
    # CR LF, so one key in eight would never match the owner's copy
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0), 0o600)
    try:
        os.write(fd, key)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return key


def ensure_private_dir(path: Path) -> None:
    """Create ``path`` as a 0700 directory owned by us, or refuse one that someone else controls."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    st = os.lstat(path)
    import stat as _stat

    if not _stat.S_ISDIR(st.st_mode):
        raise UnsafeIpcLocation(f"{path} is not a directory")
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise UnsafeIpcLocation(f"{path} belongs to another user (uid {st.st_uid}); remove it")
    if _stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(path, 0o700)


# --------------------------------------------------------------------------------------------------
# Server

Handler = Callable[[str, dict[str, Any]], "dict[str, Any] | RawJson"]


class IpcServer:
    """Accepts local connections and answers each validated request with ``handler(op, args)``.

    One thread accepts; each connection gets its own thread (at most ``max_connections``; more get an
    error reply). A connection may carry many requests. The handler's exceptions become error replies:
    exceptions whose class is listed in ``user_errors`` (by default any ``Exception`` subclass with a
    ``user_error = True`` attribute, plus ValueError/KeyError/LookupError) carry their message; anything
    else is logged with its traceback and answered as an internal error. Nothing a client sends can stop
    the server.
    """

    def __init__(
        self,
        paths: Paths,
        handler: Handler,
        *,
        max_connections: int = 64,
        idle_timeout_s: float = 300.0,
        transport: Transport = "auto",
        pipe_address: str | None = None,
        pipe_family: str | None = None,
    ) -> None:
        self.paths = paths
        self.handler = handler
        self.max_connections = max_connections
        self.idle_timeout_s = idle_timeout_s
        self.transport = _resolve_transport(transport)
        self._pipe_address = pipe_address
        self._pipe_family = pipe_family
        self._stop = threading.Event()
        self._slots = threading.BoundedSemaphore(max_connections)
        self._sock: socket.socket | None = None
        self._listener: Any = None
        self._lock_fd: int | None = None
        self._accept_thread: threading.Thread | None = None
        self._conns: set[Any] = set()
        self._conns_lock = threading.Lock()
        self.address: str = ""
        self.requests_served = 0

    # --- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        if self.transport == "unix":
            self._start_unix()
        else:
            self._start_pipe()
        self._accept_thread = threading.Thread(
            target=self._accept_loop, name="gputray-ipc-accept", daemon=True
        )
        self._accept_thread.start()
        log.info("IPC server listening on %s", self.address)

    def stop(self) -> None:
        self._stop.set()
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                self._sock.close()
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.close()
        with self._conns_lock:
            conns = list(self._conns)
        for conn in conns:
            with contextlib.suppress(OSError):
                if isinstance(conn, socket.socket):
                    conn.shutdown(socket.SHUT_RDWR)
                conn.close()
        if self._accept_thread is not None and self._accept_thread is not threading.current_thread():
            self._accept_thread.join(timeout=2.0)
        if self.transport == "unix" and self._sock is not None:
            with contextlib.suppress(OSError):
                os.unlink(socket_path(self.paths))
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._lock_fd)
            self._lock_fd = None
        self._sock = None

    # --- Unix ------------------------------------------------------------------------------------

    def _start_unix(self) -> None:
        import fcntl

        directory = socket_dir(self.paths)
        ensure_private_dir(directory)
        path = directory / SOCKET_NAME
        lock_fd = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(lock_fd)
            raise OwnerAlreadyRunning(
                f"another gputray owner is running (it holds {directory / LOCK_NAME}); "
                "use `gputray queue` to talk to it, or stop it first"
            ) from None
        try:
            if _unix_socket_answers(path):
                raise OwnerAlreadyRunning(f"another gputray owner answers on {path}")
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)  # stale: nobody holds the lock and nobody answers
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.bind(str(path))
                os.chmod(path, 0o600)
                sock.listen(128)
                sock.settimeout(0.25)
            except BaseException:
                sock.close()
                raise
        except BaseException:
            os.close(lock_fd)
            raise
        os.ftruncate(lock_fd, 0)
        os.write(lock_fd, f"{os.getpid()}\n".encode())
        self._lock_fd = lock_fd
        self._sock = sock
        self.address = str(path)

    # --- Windows pipe (also runs over AF_UNIX for tests) -----------------------------------------

    def _start_pipe(self) -> None:
        from multiprocessing.connection import Listener

        address, family = _pipe_endpoint(self.paths, self._pipe_address, self._pipe_family)
        self._authkey = load_authkey(authkey_path(self.paths), create=True)
        if _pipe_answers(address, family, self._authkey):
            raise OwnerAlreadyRunning(f"another gputray owner answers on {address}")
        try:
            if family == "AF_PIPE":  # Windows: every pipe instance admits only this user (win_pipe.py)
                from gputray.scheduler.win_pipe import private_listener

                self._listener = private_listener(address)
            else:
                self._listener = Listener(address=address, family=family)
        except OSError as exc:
            raise OwnerAlreadyRunning(f"cannot listen on {address}: {exc}") from exc
        self.address = address

    # --- serving ---------------------------------------------------------------------------------

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            try:
                conn = self._accept_one()
            except OSError as exc:
                if self._stop.is_set():
                    return
                log.warning("IPC accept failed: %s", exc)
                continue
            except Exception:
                if self._stop.is_set():
                    return
                log.exception("IPC accept failed")
                continue
            if conn is None:
                continue
            if not self._slots.acquire(blocking=False):
                self._refuse(conn, "too many connections; try again")
                continue
            with self._conns_lock:
                self._conns.add(conn)
            thread = threading.Thread(
                target=self._serve_guarded, args=(conn,), name="gputray-ipc-conn", daemon=True
            )
            thread.start()

    def _accept_one(self) -> Any:
        if self._sock is not None:
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                return None
            conn.settimeout(self.idle_timeout_s)
            return conn
        return self._listener.accept()

    def _refuse(self, conn: Any, message: str) -> None:
        with contextlib.suppress(Exception):
            self._send(conn, error_reply("Busy", message))
        with contextlib.suppress(Exception):
            conn.close()

    def _serve_guarded(self, conn: Any) -> None:
        try:
            if isinstance(conn, socket.socket):
                self._serve_socket(conn)
            else:
                self._serve_pipe(conn)
        except Exception:
            log.exception("IPC connection failed")
        finally:
            with self._conns_lock:
                self._conns.discard(conn)
            with contextlib.suppress(Exception):
                conn.close()
            self._slots.release()

    def _serve_socket(self, conn: socket.socket) -> None:
        if not _peer_is_us(conn):
            log.warning("IPC: refused a connection from another user")
            self._send(conn, error_reply("PermissionDenied", "this gputray owner belongs to another user"))
            return
        while not self._stop.is_set():
            try:
                data = read_frame(conn)
            except FrameTooLarge as exc:
                self._send(conn, error_reply("BadRequest", str(exc)))
                return
            except (ProtocolError, OSError, TimeoutError):
                return
            if data is None:
                return
            self._send(conn, self.answer(data))

    def _serve_pipe(self, conn: Any) -> None:
        from multiprocessing import AuthenticationError
        from multiprocessing.connection import deliver_challenge

        try:
            deliver_challenge(conn, self._authkey)
        except AuthenticationError:
            log.warning("IPC: refused a pipe client that failed authentication (wrong key)")
            return
        except (OSError, EOFError, ValueError):
            # gone before answering: a second owner's start-up check (_pipe_answers), not an intruder
            log.debug("IPC: a pipe client left before authenticating")
            return
        while not self._stop.is_set():
            try:
                data = conn.recv_bytes(MAX_FRAME_BYTES)
            except (EOFError, OSError):
                return
            self._send(conn, self.answer(data))

    def _send(self, conn: Any, reply: Mapping[str, Any]) -> None:
        try:
            result = reply.get("result")
            if isinstance(result, RawJson):
                payload = ('{"ok":true,"result":' + result + "}").encode("utf-8")
                if len(payload) > MAX_REPLY_BYTES:
                    raise ProtocolError(f"message too large ({len(payload)} bytes, limit {MAX_REPLY_BYTES})")
            else:
                payload = encode_payload(reply, limit=MAX_REPLY_BYTES)
        except (ProtocolError, ValueError, TypeError) as exc:
            log.error("IPC: reply could not be encoded: %s", exc)
            payload = encode_payload(error_reply("InternalError", f"reply could not be sent: {exc}"))
        try:
            if isinstance(conn, socket.socket):
                conn.sendall(_HEADER.pack(len(payload)) + payload)
            else:
                conn.send_bytes(payload)
        except OSError:
            pass

    def answer(self, data: bytes) -> dict[str, Any]:
        """One raw request → one reply. Never raises."""
        self.requests_served += 1
        try:
            op, args = validate_request(decode_payload(data))
        except BadRequest as exc:
            return error_reply("BadRequest", str(exc))
        try:
            result = self.handler(op, args)
        except Exception as exc:
            if _is_user_error(exc):
                return error_reply(type(exc).__name__, str(exc) or type(exc).__name__)
            log.exception("IPC: op %s failed", op)
            return error_reply("InternalError", f"{op} failed inside the owner: {type(exc).__name__}: {exc}")
        return {"ok": True, "result": result}


def _is_user_error(exc: BaseException) -> bool:
    if getattr(exc, "user_error", False):
        return True
    return isinstance(exc, ValueError | LookupError | BadRequest | OSError | PermissionError)


def _peer_is_us(conn: socket.socket) -> bool:
    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None or not hasattr(os, "getuid"):
        return True  # the 0700 directory and 0600 socket already keep others out
    try:
        creds = conn.getsockopt(socket.SOL_SOCKET, opt, struct.calcsize("3i"))
    except OSError:
        return True
    _pid, uid, _gid = struct.unpack("3i", creds)
    return bool(uid == os.getuid())


def _unix_socket_answers(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(2.0)
    try:
        probe.connect(str(path))
    except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError):
        return False
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ECONNREFUSED):
            return False
        raise
    finally:
        probe.close()
    return True


def _pipe_answers(address: str, family: str, authkey: bytes) -> bool:
    from multiprocessing.connection import Client

    try:
        conn = Client(address, family=family)
    except (OSError, EOFError):
        return False
    conn.close()
    return True


# --------------------------------------------------------------------------------------------------
# Client


class IpcClient:
    """Talks to the owner. Keeps one connection open across requests (``close()`` or ``with`` ends it)."""

    def __init__(
        self,
        paths: Paths,
        *,
        timeout_s: float = 60.0,
        transport: Transport = "auto",
        pipe_address: str | None = None,
        pipe_family: str | None = None,
    ) -> None:
        self.paths = paths
        self.timeout_s = timeout_s
        self.transport = _resolve_transport(transport)
        self._pipe_address = pipe_address
        self._pipe_family = pipe_family
        self._sock: socket.socket | None = None
        self._conn: Any = None
        self._lock = threading.Lock()

    def __enter__(self) -> IpcClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
            self._sock = None
        if self._conn is not None:
            with contextlib.suppress(OSError):
                self._conn.close()
            self._conn = None

    def _connect(self) -> None:
        if self.transport == "unix":
            path = socket_path(self.paths)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(self.timeout_s)
            try:
                sock.connect(str(path))
            except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError):
                sock.close()
                raise OwnerNotRunning() from None
            except OSError as exc:
                sock.close()
                raise OwnerNotRunning(f"{path}: {exc.strerror or exc}") from None
            self._sock = sock
            return
        from multiprocessing import AuthenticationError
        from multiprocessing.connection import Client, answer_challenge

        address, family = _pipe_endpoint(self.paths, self._pipe_address, self._pipe_family)
        key = load_authkey(authkey_path(self.paths), create=False)
        try:
            conn = Client(address, family=family)
        except (OSError, EOFError):
            raise OwnerNotRunning() from None
        try:
            answer_challenge(conn, key)
        except (AuthenticationError, OSError, EOFError) as exc:
            conn.close()
            raise IpcError(f"the gputray owner refused us: {exc}") from None
        self._conn = conn

    def send_raw(self, payload: bytes) -> dict[str, Any]:
        """Send already-encoded bytes as one frame (tests use it for garbage) and return the reply."""
        with self._lock:
            if self._sock is None and self._conn is None:
                self._connect()
            try:
                if self._sock is not None:
                    self._sock.sendall(_HEADER.pack(len(payload)) + payload)
                    data = read_frame(self._sock, MAX_REPLY_BYTES)
                else:
                    self._conn.send_bytes(payload)
                    data = self._conn.recv_bytes(MAX_REPLY_BYTES)
            except (OSError, EOFError, ProtocolError, FrameTooLarge) as exc:
                self.close()
                raise IpcError(f"lost the connection to the gputray owner: {exc}") from None
            if data is None:
                self.close()
                raise IpcError("the gputray owner closed the connection")
        reply = json.loads(data.decode("utf-8"))
        if not isinstance(reply, dict):
            raise ProtocolError("the owner's reply is not an object")
        return reply

    def request(self, op: str, **args: Any) -> dict[str, Any]:
        """One request; returns the result object or raises RemoteError / OwnerNotRunning / IpcError."""
        payload = encode_payload({"op": op, "args": args, "v": PROTOCOL_VERSION})
        reply = self.send_raw(payload)
        if reply.get("ok") is True:
            result = reply.get("result")
            return result if isinstance(result, dict) else {"value": result}
        error = reply.get("error")
        if isinstance(error, dict):
            raise RemoteError(str(error.get("type", "Error")), str(error.get("message", "")))
        raise ProtocolError(f"malformed reply from the owner: {str(reply)[:200]}")


def request(paths: Paths, op: str, **args: Any) -> dict[str, Any]:
    """One-shot convenience: connect, ask, close."""
    with IpcClient(paths) as client:
        return client.request(op, **args)
