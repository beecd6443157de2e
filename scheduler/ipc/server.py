"""The owner's side of the socket: ``IpcServer`` accepts local connections and answers each request.

Transport, frames and the client are the ``ipc`` package's (see its docstring).

Serving (Unix)
    One I/O thread waits on every connection with a selector; a connection holds no thread while it is
    idle. Its first complete frame must arrive within ``FIRST_FRAME_S`` of the connection (a byte
    trickled now and then does not extend it), a later frame within ``FRAME_S`` of its first byte, and
    between requests it may stay idle ``IDLE_S``. At most ``MAX_CONNECTIONS`` are open; a new
    one beyond that closes the one idle longest. Complete requests go to worker threads: ``ping`` and
    ``status`` to their own (one and two), so slow requests (a cancel waits for its job, a status
    waits for an owner that is still starting) never starve them.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import logging
import os
import queue
import secrets
import selectors
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from gputray.scheduler.ipc import (
    FRAME_HEADER,
    MAX_FRAME_BYTES,
    MAX_REPLY_BYTES,
    OwnerAlreadyRunning,
    ProtocolError,
    Transport,
    UnsafeIpcLocation,
    authkey_path,
    encode_payload,
    error_reply,
    load_authkey,
    owner_socket,
    peer_uid,
    pipe_family,
    pipe_name,
    resolve_transport,
)
from gputray.scheduler.ipc import location as loc
from gputray.scheduler.ipc.fd_shortage import AcceptGuard, is_shortage, raise_open_file_limit
from gputray.scheduler.ipc.location import SOCKET_NAME, UntrustedLocation
from gputray.scheduler.ipc.parking import DEFERRED_OPS, Deferred, Parked, Parking
from gputray.scheduler.paths import FolderError, Paths, unwritable_reason
from gputray.scheduler.protocol import BadRequest, Refusal, Request, decode_request
from gputray.scheduler.queue.lock import PidLock
from gputray.scheduler.queue.store_errors import is_disk_full, no_space_message
from gputray.scheduler.replies import Reply

log = logging.getLogger("gputray.ipc")

FIRST_FRAME_S = 5.0  # a new connection's first complete request must arrive within this
FRAME_S = 10.0  # a later request, once its first byte is in (1 MiB at the slowest sane local rate)
IDLE_S = 300.0  # a kept connection between requests
MAX_CONNECTIONS = 4096  # parked `wait`s included (they hold no thread)
WORKERS = 16
#: ops with workers of their own, never behind slow requests (``wait``: to park it, then to answer it)
LIGHT_WORKERS = {"ping": 1, "status": 2, "wait": 2}
SEND_TIMEOUT_S = 30.0


def _take_owner_lock(paths: Paths) -> PidLock:
    """The flock that keeps a second owner out (in the data folder: it never moves)."""
    lock = PidLock(loc.owner_lock_path(paths))
    try:
        taken = lock.acquire()
    except OSError as exc:  # a read-only or someone else's data folder: said in words, not a traceback
        why = unwritable_reason(lock.path.parent, lock.path)
        raise FolderError(why or f"cannot take the owner lock {lock.path}: {exc.strerror or exc}") from None
    if not taken:
        raise OwnerAlreadyRunning(
            f"another gputray owner is running (it holds {lock.path}); "
            "use `gputray queue` to talk to it, or stop it first"
        )
    return lock


Handler = Callable[[Request[Any]], Reply]
Deferrer = Callable[[Request[Any]], Deferred | None]


class _OpName(msgspec.Struct):
    op: str = ""


@dataclass(eq=False)
class _Conn:
    sock: socket.socket
    deadline: float
    buf: bytearray = field(default_factory=bytearray)
    fresh: bool = True  # no complete request yet: the first-frame deadline holds, trickling or not
    busy: bool = False  # a worker has it (answering); the selector does not watch it meanwhile
    idle_since: float = 0.0


#: a request to answer, or a reply to send and then close (keep: a parked request's, then serve on)
_Work = tuple[_Conn, bytes | None, dict[str, Any] | None, bool]


class IpcServer:
    """Accepts local connections and answers each decoded request with ``handler(request)``.

    See the module docstring for how connections are served. A connection may carry many requests, one
    at a time. The handler's exceptions become error replies: a ``protocol.Refusal`` carries its
    message; anything else is logged with its traceback and answered as an internal error. Nothing a
    client sends, or fails to send, can stop the server or keep other clients out.
    """

    def __init__(
        self,
        paths: Paths,
        handler: Handler,
        *,
        first_frame_s: float = FIRST_FRAME_S,
        transport: Transport = "auto",
        pipe_address: str | None = None,
        pipe_family: str | None = None,
        deferrer: Deferrer | None = None,
    ) -> None:
        self.paths = paths
        self.handler = handler
        self.deferrer = deferrer  # a request answered later (``wait``): its connection is parked
        self.first_frame_s = first_frame_s
        self.transport = resolve_transport(transport)
        self._pipe_address = pipe_address
        self.pipe_family = pipe_family
        self._stop = threading.Event()
        self._sock: socket.socket | None = None
        self._listener: Any = None
        self._owner_lock: PidLock | None = None
        self._threads: list[threading.Thread] = []
        self._conns: dict[int, _Conn] = {}  # by id: the Unix connections open now
        self._pipe_conns: set[Any] = set()
        self._conns_lock = threading.Lock()
        self._returned: collections.deque[_Conn] = collections.deque()
        # One queue of work per light op (ping, status), and "" for every other request.
        self._queues: dict[str, queue.Queue[_Work | None]] = {
            op: queue.Queue() for op in (*LIGHT_WORKERS, "")
        }
        self._selector: selectors.BaseSelector | None = None
        self.parking: Parking[_Conn] = Parking(self._wake, lambda conn: conn.sock)
        self._accept_guard: AcceptGuard | None = None  # out of fds: refuse in words, or pause (Unix)
        self._wake_r: socket.socket | None = None
        self._wake_w: socket.socket | None = None
        self._private_dir: Path | None = None  # a fallback folder of ours, removed at stop
        self._pipe_slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self.address: str = ""
        self.connections_closed_for_deadline = 0

    # --- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        self._owner_lock = _take_owner_lock(self.paths)
        try:
            if self.transport == "unix":
                raise_open_file_limit()  # ~1,000 parked waits each hold a connection
                self._start_unix()
            else:
                self._start_pipe()
        except BaseException:
            self._owner_lock.release()
            raise
        if self.transport == "unix":
            self._spawn(self._io_loop, "gputray-ipc-io")
            for op, jobs in self._queues.items():
                for _ in range(LIGHT_WORKERS.get(op, WORKERS)):
                    self._spawn(functools.partial(self._work, jobs), "gputray-ipc-conn")
        else:
            self._spawn(self._pipe_accept_loop, "gputray-ipc-accept")
        log.info("IPC server listening on %s", self.address)

    def _spawn(self, target: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def stop(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        self._wake()
        self.parking.cancel_all()
        for q in self._queues.values():
            for _ in range(WORKERS + 2):
                q.put(None)
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.close()
        with self._conns_lock:
            pipe_conns = list(self._pipe_conns)
        for pc in pipe_conns:
            with contextlib.suppress(OSError):
                pc.close()
        for thread in self._threads:
            if thread is not threading.current_thread() and thread.name != "gputray-ipc-conn":
                thread.join(timeout=2.0)
        with self._conns_lock:
            conns = list(self._conns.values())
            self._conns.clear()
        for conn in conns:
            _close(conn.sock)
        if self._sock is not None:
            _close(self._sock)
            if self.address:
                with contextlib.suppress(OSError):
                    os.unlink(self.address)
        for s in (self._wake_r, self._wake_w):
            if s is not None:
                _close(s)
        if self._accept_guard is not None:
            self._accept_guard.close()
        if self._private_dir is not None:
            with contextlib.suppress(OSError):
                self._private_dir.rmdir()
        if self.address:
            loc.remove_pointer(self.paths, self.address)
        if self._owner_lock is not None:
            self._owner_lock.release()
        self._sock = None

    # --- Unix ------------------------------------------------------------------------------------

    def _start_unix(self) -> None:
        # we hold the owner lock: an earlier owner's is dead
        owner_socket.remove_stale_private_dir(self.paths)
        try:
            directory, why = loc.server_socket_dir(self.paths)
        except (UntrustedLocation, OSError) as exc:
            raise UnsafeIpcLocation(f"no private folder for the socket could be made: {exc}") from None
        if why is not None:
            log.warning("IPC: not using the usual socket folder (%s): the socket is in %s", why, directory)
            self._private_dir = directory
        path = directory / SOCKET_NAME
        if why is None and owner_socket.unix_socket_answers(path):
            raise OwnerAlreadyRunning(f"another gputray owner answers on {path}")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # stale: nobody holds the owner lock and nobody answers
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(str(path))
            os.chmod(path, 0o600)
            sock.listen(128)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            if self._private_dir is not None:
                with contextlib.suppress(OSError):
                    self._private_dir.rmdir()
            raise
        self._sock = sock
        self.address = str(path)
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(sock, selectors.EVENT_READ, "listen")
        self._selector.register(self._wake_r, selectors.EVENT_READ, "wake")
        self._accept_guard = AcceptGuard()
        try:
            loc.write_pointer(self.paths, self.address)
        except OSError as exc:  # a full disk, say: one line from the daemon, never a traceback
            self._sock = None
            sock.close()
            with contextlib.suppress(OSError):
                os.unlink(path)
            if self._private_dir is not None:
                with contextlib.suppress(OSError):
                    self._private_dir.rmdir()
            pointer = loc.pointer_path(self.paths)
            why = no_space_message(pointer.parent) if is_disk_full(exc, pointer.parent) else exc.strerror
            raise FolderError(f"cannot write {pointer}: {why or exc}") from None

    def _wake(self) -> None:
        if self._wake_w is not None:
            with contextlib.suppress(OSError):
                self._wake_w.send(b"x")

    def _io_loop(self) -> None:
        sel = self._selector
        assert sel is not None
        while not self._stop.is_set():
            guard = self._accept_guard
            if guard is not None and self._sock is not None and guard.resume_due():
                with contextlib.suppress(KeyError, ValueError, OSError):
                    sel.register(self._sock, selectors.EVENT_READ, "listen")
            try:
                events = sel.select(self._select_timeout())
            except OSError:
                if self._stop.is_set():
                    return
                continue
            for key, _mask in events:
                if key.data == "listen":
                    self._accept_ready()
                elif key.data == "wake":
                    with contextlib.suppress(OSError):
                        while self._wake_r is not None and self._wake_r.recv(4096):
                            pass
                elif isinstance(key.data, Parked):
                    if not self.parking.readable(key.data, key.data.conn.buf, sel):
                        self._drop(key.data.conn)
                else:
                    self._read_ready(key.data)
            self.parking.step(sel, lambda conn, reply: self._queues["wait"].put((conn, None, reply, True)))
            self._take_back()
            self._expire()

    def _select_timeout(self) -> float:
        now = time.monotonic()
        with self._conns_lock:
            deadlines = [c.deadline for c in self._conns.values() if not c.busy]
        if self._accept_guard is not None and self._accept_guard.paused_until is not None:
            deadlines.append(self._accept_guard.paused_until)
        return max(0.0, min(1.0, *(d - now for d in deadlines))) if deadlines else 1.0

    def _accept_ready(self) -> None:
        assert self._sock is not None and self._selector is not None
        while True:
            try:
                sock, _ = self._sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if self._stop.is_set():
                    return
                if is_shortage(exc) and self._accept_guard is not None:
                    if self._accept_guard.on_shortage(self._sock, exc, _refuse_out_of_files):
                        continue
                    with contextlib.suppress(KeyError, ValueError, OSError):
                        self._selector.unregister(self._sock)  # no spinning on a listener kept readable
                    return
                log.warning("IPC accept failed: %s", exc)
                return
            if self._accept_guard is not None:
                self._accept_guard.on_accepted()
            if not _peer_is_us(sock):
                log.warning("IPC: refused a connection from another user")
                _send_quick(
                    sock, error_reply("PermissionDenied", "this gputray owner belongs to another user")
                )
                _close(sock)
                continue
            sock.setblocking(False)
            now = time.monotonic()
            conn = _Conn(sock, deadline=now + self.first_frame_s, idle_since=now)
            if not self._make_room():
                _send_quick(sock, error_reply("Busy", "too many connections are being answered; try again"))
                _close(sock)
                continue
            with self._conns_lock:
                self._conns[id(conn)] = conn
            self._selector.register(sock, selectors.EVENT_READ, conn)

    def _make_room(self) -> bool:
        """Room for one more connection: close the one idle the longest when all places are taken."""
        with self._conns_lock:
            if len(self._conns) < MAX_CONNECTIONS:
                return True
            idle = [c for c in self._conns.values() if not c.busy]
        if not idle:
            return False
        self._drop(min(idle, key=lambda c: c.idle_since))
        return True

    def _drop(self, conn: _Conn) -> None:
        with self._conns_lock:
            self._conns.pop(id(conn), None)
        if self._selector is not None and not conn.busy:
            with contextlib.suppress(KeyError, ValueError, OSError):
                self._selector.unregister(conn.sock)
        _close(conn.sock)

    def _read_ready(self, conn: _Conn) -> None:
        try:
            data = conn.sock.recv(1 << 16)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._drop(conn)
            return
        if not data:
            self._drop(conn)
            return
        if not conn.buf and not conn.fresh:  # the first byte of a later request: it has FRAME_S
            conn.deadline = time.monotonic() + FRAME_S
        conn.buf += data
        self._try_frame(conn)

    def _try_frame(self, conn: _Conn) -> None:
        if len(conn.buf) < FRAME_HEADER.size:
            return
        (length,) = FRAME_HEADER.unpack_from(conn.buf)
        if length > MAX_FRAME_BYTES:
            self._hand_over(
                conn,
                None,
                error_reply("BadRequest", f"message too large ({length} bytes, at most {MAX_FRAME_BYTES})"),
            )
            return
        end = FRAME_HEADER.size + length
        if len(conn.buf) < end:
            return
        payload = bytes(conn.buf[FRAME_HEADER.size : end])
        del conn.buf[:end]
        self._hand_over(conn, payload, None)

    def _hand_over(self, conn: _Conn, payload: bytes | None, reply: dict[str, Any] | None) -> None:
        """To a worker: ``payload`` to answer, or ``reply`` to send and then close."""
        assert self._selector is not None
        with contextlib.suppress(KeyError, ValueError, OSError):
            self._selector.unregister(conn.sock)
        conn.busy = True
        conn.fresh = False
        op = "ping" if payload is None else _op_of(payload)  # an error to send: the ping worker sends it
        self._queues[op if op in LIGHT_WORKERS else ""].put((conn, payload, reply, False))

    def _take_back(self) -> None:
        """Connections the workers have answered: watched again, or their next request handed on."""
        assert self._selector is not None
        while True:
            try:
                conn = self._returned.popleft()
            except IndexError:
                return
            now = time.monotonic()
            conn.busy = False
            conn.idle_since = now
            conn.deadline = now + (FRAME_S if conn.buf else IDLE_S)
            try:
                self._selector.register(conn.sock, selectors.EVENT_READ, conn)
            except (KeyError, ValueError, OSError):
                self._drop(conn)
                continue
            self._try_frame(conn)  # a request sent right behind the last one

    def _expire(self) -> None:
        now = time.monotonic()
        with self._conns_lock:
            late = [c for c in self._conns.values() if not c.busy and now >= c.deadline]
        for conn in late:
            self.connections_closed_for_deadline += 1
            self._drop(conn)

    def _work(self, jobs: queue.Queue[_Work | None]) -> None:
        while True:
            item = jobs.get()
            if item is None or self._stop.is_set():
                return
            conn, payload, reply, keep = item
            try:
                answer = reply if reply is not None else self._answer_or_park(conn, payload or b"")
                if answer is None:  # parked: answered later, through the I/O thread
                    continue
                data = _reply_payload(answer)
                sent = _send_blocking(conn.sock, FRAME_HEADER.pack(len(data)) + data)
            except Exception:
                log.exception("IPC connection failed")
                sent = False
            if sent and (reply is None or keep) and not self._stop.is_set():
                self._returned.append(conn)
                self._wake()
            else:
                with self._conns_lock:
                    self._conns.pop(id(conn), None)
                _close(conn.sock)

    # --- Windows pipe (also runs over AF_UNIX for tests) -----------------------------------------

    def _start_pipe(self) -> None:
        family = pipe_family(self.pipe_family)
        self._authkey = load_authkey(authkey_path(self.paths), create=True)
        address = self._pipe_address or pipe_name(self.paths)
        if owner_socket.pipe_answers(address, family, self._authkey):
            raise OwnerAlreadyRunning(f"another gputray owner answers on {address}")
        try:
            self._listener = owner_socket.listen(address, family)
        except OSError as exc:
            if self._pipe_address is not None:
                raise OwnerAlreadyRunning(f"cannot listen on {address}: {exc}") from exc
            # The name is taken by something that cannot prove our key: listen elsewhere, say where.
            log.warning("IPC: %s is taken by someone else (%s): listening on a private name", address, exc)
            address = f"{address}-{secrets.token_hex(8)}"
            self._listener = owner_socket.listen(address, family)
        self.address = address
        if self._pipe_address is None:
            loc.write_pointer(self.paths, address)

    def _pipe_accept_loop(self) -> None:
        while not self._stop.is_set():
            try:
                conn = self._listener.accept()
            except Exception as exc:
                if self._stop.is_set():
                    return
                if isinstance(exc, OSError):
                    log.warning("IPC accept failed: %s", exc)
                else:
                    log.exception("IPC accept failed")
                continue
            if not self._pipe_slots.acquire(blocking=False):
                with contextlib.suppress(Exception):
                    conn.send_bytes(encode_payload(error_reply("Busy", "too many connections; try again")))
                owner_socket.close_quietly(conn)
                continue
            with self._conns_lock:
                self._pipe_conns.add(conn)
            threading.Thread(
                target=self._serve_pipe_guarded, args=(conn,), name="gputray-ipc-conn", daemon=True
            ).start()

    def _serve_pipe_guarded(self, conn: Any) -> None:
        try:
            self._serve_pipe(conn)
        except Exception:
            log.exception("IPC connection failed")
        finally:
            with self._conns_lock:
                self._pipe_conns.discard(conn)
            owner_socket.close_quietly(conn)
            self._pipe_slots.release()

    def _serve_pipe(self, conn: Any) -> None:
        from multiprocessing import AuthenticationError
        from multiprocessing.connection import answer_challenge, deliver_challenge

        # Authentication and the first request must be done within first_frame_s: a client that
        # connects and waits is closed then (closing the handle ends the blocked read).
        watchdog = threading.Timer(self.first_frame_s, lambda: owner_socket.close_quietly(conn))
        watchdog.daemon = True
        watchdog.start()
        try:
            deliver_challenge(conn, self._authkey)  # the client proves the key ...
            answer_challenge(conn, self._authkey)  # ... and so do we, before it sends anything
            first = True
            while not self._stop.is_set():
                if not first and not conn.poll(IDLE_S):
                    return
                data = conn.recv_bytes(MAX_FRAME_BYTES)
                if first:
                    watchdog.cancel()
                    first = False
                conn.send_bytes(_reply_payload(self.answer(data)))
        except AuthenticationError:
            log.warning("IPC: refused a pipe client that failed authentication (wrong key)")
        except (OSError, EOFError, ValueError):
            # gone (a second owner's start-up check, _pipe_answers, leaves before answering) or timed out
            log.debug("IPC: a pipe client left or was closed")
        finally:
            watchdog.cancel()

    def _answer_or_park(self, conn: _Conn, data: bytes) -> dict[str, Any] | None:
        """The reply now, or None: the request is answered later and its connection parked."""
        if self.deferrer is None or _op_of(data) not in DEFERRED_OPS:
            return self.answer(data)
        try:
            later = self.deferrer(decode_request(data))
        except Refusal as exc:  # BadRequest included
            return error_reply(type(exc).__name__, str(exc) or type(exc).__name__)
        except Exception as exc:
            log.exception("IPC: a deferred request failed")
            return error_reply("InternalError", f"{_op_of(data)} failed inside the owner: {exc}")
        if later is None:
            return self.answer(data)
        self.parking.park(conn, later)
        return None

    def answer(self, data: bytes) -> dict[str, Any]:
        """One raw request → one reply. Never raises."""
        try:
            req = decode_request(data)
        except BadRequest as exc:
            return error_reply(type(exc).__name__, str(exc))
        try:
            result = self.handler(req)
        except Refusal as exc:
            return error_reply(type(exc).__name__, str(exc) or type(exc).__name__)
        except Exception as exc:
            log.exception("IPC: op %s failed", req.op)
            return error_reply(
                "InternalError", f"{req.op} failed inside the owner: {type(exc).__name__}: {exc}"
            )
        return {"ok": True, "result": result}


def _reply_payload(reply: Mapping[str, Any]) -> bytes:
    try:
        return encode_payload(reply, limit=MAX_REPLY_BYTES)
    except (ProtocolError, ValueError, TypeError, OverflowError) as exc:
        log.error("IPC: reply could not be encoded: %s", exc)
        return encode_payload(error_reply("InternalError", f"reply could not be sent: {exc}"))


def _op_of(payload: bytes) -> str:
    try:
        return msgspec.json.decode(payload, type=_OpName).op
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return ""


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()


def _send_quick(sock: socket.socket, reply: Mapping[str, Any]) -> None:
    """A short error reply to a connection we are about to close; never blocks for long."""
    payload = encode_payload(reply)
    with contextlib.suppress(OSError):
        sock.settimeout(0.5)
        sock.sendall(FRAME_HEADER.pack(len(payload)) + payload)


def _refuse_out_of_files(sock: socket.socket) -> None:
    _send_quick(
        sock,
        error_reply(
            "Busy", "the gputray owner has run out of open files: nothing was done; try again in a moment"
        ),
    )


def _send_blocking(sock: socket.socket, data: bytes) -> bool:
    """Send a whole reply (a client that reads nothing for SEND_TIMEOUT_S loses its connection)."""
    try:
        sock.settimeout(SEND_TIMEOUT_S)
        sock.sendall(data)
        sock.setblocking(False)
        return True
    except OSError:
        return False


def _peer_is_us(conn: socket.socket) -> bool:
    uid = peer_uid(conn)
    return uid is None or uid == os.getuid()  # None: the 0700 folder and 0600 socket keep others out
