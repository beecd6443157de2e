"""The owner's local socket: how the CLI and a second launch talk to the one process that owns the queue.

Transport
    * Unix: an ``AF_UNIX`` stream socket ``owner.sock`` in a private (0700) folder, the socket 0600;
      where it lives and what a client checks before it sends anything is ``ipc_location`` (other
      users can neither squat the location nor receive a byte). The server also checks each peer's
      uid (``SO_PEERCRED``) and the client the server's. A flock on ``owner.lock`` in the data folder
      plus a connect-first check keep a second owner from silently replacing a live one: only a
      socket that refuses connections while nobody holds the lock is unlinked.
    * Windows: a named pipe through ``multiprocessing.connection`` (Python has no ``AF_UNIX`` on
      Windows). Each pipe instance is created with a DACL that admits only this user's SID
      (``win_pipe.py``; multiprocessing passes no security attributes, and ``CreateNamedPipe``'s
      default DACL gives Everyone read access). The key is the second wall: a 32-byte secret in the
      user's data folder (``ipc.key``; the data folder is the user's profile, which other users cannot
      read). Both sides prove they hold it (HMAC challenge one way, then the other), so another user
      can neither talk to the owner nor, by creating a pipe of that name first, receive what a client
      would send: the client answers the server's challenge and then demands an answer to its own
      before it sends a request. A squatted name does not stop the owner either: it listens on a name
      with a random part and writes it to the pointer file. Only ``send_bytes``/``recv_bytes`` are
      used: never ``recv()``, which unpickles.

Serving: ``server.IpcServer`` (the owner's side; see its module).

Frames
    A request or reply is one JSON object, UTF-8. On the Unix socket each frame is a 4-byte big-endian
    length then the payload; on the pipe ``multiprocessing`` frames the bytes itself. Frames over
    ``MAX_FRAME_BYTES`` (1 MiB) get an error reply and the connection is closed. Replies come from the
    trusted owner and may be larger (``queue`` of 10,000 tasks is ~2.5 MB): the client accepts up to
    ``MAX_REPLY_BYTES``. Text that holds bytes which are not UTF-8 (a file name in Latin-1, as Python
    reads it: surrogate escapes) travels as JSON ``\\udcXX`` escapes and arrives as the same str
    (``protocol.encode_json`` / ``decode_json``): the name the OS has, not U+FFFD.

Requests are ``{"op": NAME, "args": {...}, "v": PROTOCOL_VERSION}`` (6 now); replies
``{"ok": true, "result": {...}}`` or ``{"ok": false, "error": {"type": ..., "message": ...}}``. Every
request is decoded into its op's typed
Struct (``protocol``: known op, known argument names, types and sizes) before a handler sees it, so
garbage gets an error reply and never reaches the queue. The handler answers with the op's reply Struct
(``replies``), encoded by msgspec; the client decodes the result into the same type
(``protocol.REPLY_TYPES``), and one that does not fit is a ``ProtocolError`` saying so.
"""

from __future__ import annotations

import _socket  # the C module alone: ``socket.py`` (enums, selectors) costs a command ~1.5 ms
import _thread
import contextlib
import os
import struct
import sys
from pathlib import Path
from typing import Any, Literal

import msgspec

from gputray.scheduler.ipc import location as loc
from gputray.scheduler.ipc.location import SOCKET_NAME, UntrustedLocation
from gputray.scheduler.paths import Paths
from gputray.scheduler.protocol import (
    OPS,
    PROTOCOL_VERSION,
    BadRequest,
    R,
    Refusal,
    Request,
    decode_json,
    encode_json,
    reply_type,
)

__all__ = ["OPS", "PROTOCOL_VERSION", "SOCKET_NAME", "BadRequest", "Refusal"]

MAX_FRAME_BYTES = 1 << 20
MAX_REPLY_BYTES = 256 << 20
AUTHKEY_NAME = "ipc.key"
FRAME_HEADER = struct.Struct(">I")

HOW_TO_START = "start the tray app (`gputray`) or `gputray daemon`"


class IpcError(Exception):
    """Base of everything this module raises."""


class OwnerNotRunning(IpcError):
    """No owner of ours answers. ``untrusted``: a socket was there but is not ours (nothing was sent)."""

    def __init__(self, detail: str = "", *, untrusted: str | None = None) -> None:
        message = f"no gputray owner is running: {HOW_TO_START}"
        super().__init__(f"{message} ({detail})" if detail else message)
        self.untrusted = untrusted


class OwnerAlreadyRunning(IpcError):
    pass


class UnsafeIpcLocation(IpcError):
    """A folder for the socket that someone else controls, and no private one could be made either."""


class ProtocolError(IpcError):
    """The other side sent something that is not a valid frame or reply."""


class RemoteError(IpcError):
    """The owner answered with an error; ``kind`` is its type name (``TaskNotFound``, ``BadRequest`` ...)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


# --------------------------------------------------------------------------------------------------
# Frames


def encode_payload(obj: object, *, limit: int = MAX_FRAME_BYTES) -> bytes:
    data = encode_json(obj)
    if len(data) > limit:
        raise ProtocolError(f"message too large ({len(data)} bytes, at most {limit})")
    return data


class FrameTooLarge(IpcError):
    pass


def _recv_exact(sock: _socket.socket, size: int) -> bytes | None:
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


def read_frame(sock: _socket.socket, limit: int = MAX_FRAME_BYTES) -> bytes | None:
    header = _recv_exact(sock, FRAME_HEADER.size)
    if header is None:
        return None
    (length,) = FRAME_HEADER.unpack(header)
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
# Where the socket lives (see ipc_location)


def is_windows() -> bool:
    return sys.platform == "win32"


def socket_dir(paths: Paths) -> Path:
    """The usual folder of the socket (the owner moves it to a private one when this one cannot be used)."""
    return loc.preferred_socket_dir(paths)


def socket_path(paths: Paths) -> Path:
    """The socket a client tries: where the running owner's pointer says, else the usual place."""
    return loc.client_socket_path(paths)


def ensure_private_dir(path: Path) -> None:
    """Create ``path`` as a 0700 folder of ours, or raise UnsafeIpcLocation for one someone else controls."""
    try:
        loc.make_private_dir(path)
    except UntrustedLocation as exc:
        raise UnsafeIpcLocation(str(exc)) from None


def pipe_name(paths: Paths, user: str | None = None) -> str:
    """The Windows pipe name: per user and per data dir, so GPUTRAY_HOME owners never meet."""
    if user is None:
        user = os.environ.get("USERNAME") or os.environ.get("USER") or "user"
    import hashlib

    digest = hashlib.sha256(f"{user.lower()}\x00{paths.data_dir}".encode()).hexdigest()[:24]
    return rf"\\.\pipe\gputray-{digest}"


Transport = Literal["auto", "unix", "pipe"]


def resolve_transport(transport: Transport) -> Literal["unix", "pipe"]:
    """``auto`` → a named pipe on Windows, a Unix socket elsewhere (server and client must agree)."""
    if transport == "auto":
        return "pipe" if is_windows() else "unix"
    return transport


def pipe_family(family: str | None) -> str:
    return family or ("AF_PIPE" if is_windows() else "AF_UNIX")


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


def peer_uid(conn: _socket.socket) -> int | None:
    """The uid of the process at the other end (SO_PEERCRED), None where the kernel does not say."""
    opt = getattr(_socket, "SO_PEERCRED", None)
    if opt is None or not hasattr(os, "getuid"):
        return None
    try:
        creds = conn.getsockopt(_socket.SOL_SOCKET, opt, struct.calcsize("3i"))
    except OSError:
        return None
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)


# --------------------------------------------------------------------------------------------------
# Client


class _Error(msgspec.Struct):
    type: str = "Error"
    message: str = ""


class _Frame(msgspec.Struct):
    """A reply as it arrives; ``result`` is decoded into the op's type once the op is known."""

    ok: bool
    result: msgspec.Raw = msgspec.Raw()
    error: _Error | None = None


class _LooseFrame(msgspec.Struct):
    """A reply whose text holds ``\\udcXX`` escapes (names that are not UTF-8), as the standard library
    reads it (``protocol.decode_json``); ``result`` is converted into the op's type."""

    ok: bool
    result: Any = None
    error: _Error | None = None


class IpcClient:
    """Talks to the owner. Keeps one connection open across requests (``close()`` or ``with`` ends it).

    Before it sends anything it makes sure the other end is this user's owner: on Unix the socket's
    folder and file are ours and private and the server's uid is ours; on the pipe the server proves it
    holds the user's key."""

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
        self.transport = resolve_transport(transport)
        self._pipe_address = pipe_address
        self.pipe_family = pipe_family
        self._sock: _socket.socket | None = None
        self._conn: Any = None
        self._lock = _thread.allocate_lock()  # threading.Lock, without importing threading for one request

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
            self._sock = _connect_unix(self.paths, self.timeout_s)
            return
        from multiprocessing import AuthenticationError
        from multiprocessing.connection import Client, answer_challenge, deliver_challenge

        family = pipe_family(self.pipe_family)
        address = self._pipe_address or loc.read_pointer(self.paths) or pipe_name(self.paths)
        key = load_authkey(authkey_path(self.paths), create=False)
        try:
            conn = Client(address, family=family)
        except (OSError, EOFError):
            raise OwnerNotRunning() from None
        try:
            answer_challenge(conn, key)
            deliver_challenge(conn, key)  # the server must prove the key too, before we send a byte
        except (AuthenticationError, OSError, EOFError) as exc:
            conn.close()
            raise IpcError(f"the other end of {address} is not this user's gputray owner: {exc}") from None
        self._conn = conn

    def send_raw(self, payload: bytes) -> dict[str, Any]:
        """Send already-encoded bytes as one frame (tests use it for garbage) and return the reply."""
        reply = msgspec.json.decode(self._exchange(payload))
        if not isinstance(reply, dict):
            raise ProtocolError("the owner's reply is not an object")
        return reply

    def _exchange(self, payload: bytes) -> bytes:
        with self._lock:
            if self._sock is None and self._conn is None:
                self._connect()
            try:
                if self._sock is not None:
                    self._sock.sendall(FRAME_HEADER.pack(len(payload)) + payload)
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
        return bytes(data)

    def ask(self, request: Request[R]) -> R:
        """One request; returns its reply, of the type the request names (``class Queue(Request[
        QueueReply])``), or raises RemoteError / OwnerNotRunning / IpcError (ProtocolError: a reply this
        gputray cannot read)."""
        data = self._exchange(encode_payload({"op": request.op, "args": request, "v": PROTOCOL_VERSION}))
        reply: _Frame | _LooseFrame
        try:
            try:
                reply = msgspec.json.decode(data, type=_Frame)
            except msgspec.ValidationError:
                raise
            except msgspec.DecodeError:  # text with \\udcXX escapes, or not JSON at all
                reply = decode_json(data, _LooseFrame)
        except msgspec.DecodeError as exc:
            raise ProtocolError(f"malformed reply from the owner: {exc}") from None
        if not reply.ok or reply.error is not None:
            error = reply.error or _Error(type="Error", message="the owner answered nothing")
            raise RemoteError(error.type, error.message)
        kind = reply_type(request)
        try:
            if isinstance(reply.result, msgspec.Raw):
                return msgspec.json.decode(reply.result, type=kind)
            return msgspec.convert(reply.result, kind)  # it had \\udcXX escapes
        except msgspec.DecodeError as exc:  # a wrong type or unknown field, or no result at all
            raise ProtocolError(
                f"the owner's reply to {request.op!r} does not fit this gputray ({exc}): is the owner "
                "another version? Restart it (quit the tray, or `gputray daemon --stop` then "
                "`gputray daemon`)"
            ) from None


def _connect_unix(paths: Paths, timeout_s: float) -> _socket.socket:
    path = socket_path(paths)
    try:
        loc.check_private_socket(path)
    except FileNotFoundError:
        raise OwnerNotRunning() from None
    except UntrustedLocation as exc:
        raise OwnerNotRunning(
            f"{path} is not this user's; nothing was sent to it", untrusted=str(exc)
        ) from None
    except OSError as exc:
        raise OwnerNotRunning(f"{path}: {exc.strerror or exc}") from None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(timeout_s)
    try:
        sock.connect(str(path))
    except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError):
        sock.close()
        raise OwnerNotRunning() from None
    except OSError as exc:
        sock.close()
        raise OwnerNotRunning(f"{path}: {exc.strerror or exc}") from None
    uid = peer_uid(sock)
    if uid is not None and uid != os.getuid():
        sock.close()
        raise OwnerNotRunning(
            f"{path} is served by another user (uid {uid}); nothing was sent to it",
            untrusted=f"the server on {path} runs as uid {uid}",
        )
    return sock


def ask(paths: Paths, request: Request[R]) -> R:
    """One-shot convenience: connect, ask, close."""
    with IpcClient(paths) as client:
        return client.ask(request)
