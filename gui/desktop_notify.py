"""Notifications with buttons, through the desktop's notification daemon (Linux and other freedesktop
desktops: GNOME Shell, KDE Plasma, XFCE, dunst, mako …), per the Desktop Notifications Specification.

``QSystemTrayIcon.showMessage`` has no buttons. A daemon that lists ``actions`` in ``GetCapabilities``
shows the ``actions`` of a ``Notify`` call as buttons and sends ``ActionInvoked(id, key)`` when one is
pressed, then ``NotificationClosed(id, reason)``; ``DesktopNotifier`` makes those calls and hands each
answer to ``on_answer(id, key)`` (key ``""``: closed without a choice), on its D-Bus thread.

Why jeepney and not Qt's own QtDBus: ``Notify`` takes ``replaces_id`` as a uint32 (signature
``susssasa{sv}i``) and PySide6 marshals every Python int as int32, which the daemons refuse
(``InvalidArgs``); jeepney (pure Python, Linux only) writes the signature it is given. Without jeepney,
a session bus or a daemon with buttons, ``DesktopNotifier.open`` answers None and the tray shows its
balloon instead (docs/gui.md).
"""

from __future__ import annotations

import logging
import queue
from collections.abc import Callable, Sequence
from typing import Any

log = logging.getLogger("gputray.gui.desktop_notify")

NAME = "org.freedesktop.Notifications"
PATH = "/org/freedesktop/Notifications"
CALL_TIMEOUT_S = 3.0  # a daemon that does not answer in time is treated as absent
#: What an answer's key is when the notification went away without a button: expired, dismissed, closed.
CLOSED = ""

Answer = Callable[[int, str], None]


class _Relay(queue.Queue[Any]):
    """jeepney's router puts each matched signal in a queue on its receive thread; this one hands it on."""

    def __init__(self, deliver: Callable[[Any], None]) -> None:
        super().__init__()
        self._deliver = deliver

    def put_nowait(self, item: Any) -> None:
        self._deliver(item)


class DesktopNotifier:
    """A connection to the session bus's notification daemon, which shows buttons (see the module)."""

    def __init__(self, router: Any, connection: Any, on_answer: Answer) -> None:
        self._router = router
        self._connection = connection
        self._on_answer = on_answer
        self._filters: list[Any] = []
        self._closed = False

    @classmethod
    def open(cls, on_answer: Answer, *, bus: str = "SESSION") -> DesktopNotifier | None:
        """Connected to a daemon that shows buttons, or None (and logged why): no jeepney, no session bus
        (``bus``: "SESSION" or a D-Bus address), no daemon, or one without the ``actions`` capability."""
        try:
            from jeepney import DBusAddress, MatchRule, MessageType, new_method_call
            from jeepney.bus_messages import message_bus
            from jeepney.io.threading import DBusRouter, Proxy, open_dbus_connection
        except ImportError:
            log.info("desktop notifications with buttons: jeepney is not installed")
            return None
        try:
            connection = open_dbus_connection(bus=bus)
        except Exception as exc:  # no DBUS_SESSION_BUS_ADDRESS, a bus that went away …
            log.info("desktop notifications with buttons: no session bus (%s)", exc)
            return None
        router = DBusRouter(connection)
        try:
            daemon = DBusAddress(PATH, bus_name=NAME, interface=NAME)
            reply = router.send_and_get_reply(
                new_method_call(daemon, "GetCapabilities"), timeout=CALL_TIMEOUT_S
            )
            if reply.header.message_type == MessageType.error:
                raise OSError(f"GetCapabilities: {reply.body}")
            capabilities = [str(c) for c in reply.body[0]]
            if "actions" not in capabilities:
                log.info("desktop notifications with buttons: the daemon shows none (%s)", capabilities)
                raise LookupError("no actions")
            made = cls(router, connection, on_answer)
            bus_proxy = Proxy(message_bus, router, timeout=CALL_TIMEOUT_S)
            for member in ("ActionInvoked", "NotificationClosed"):
                rule = MatchRule(type="signal", interface=NAME, path=PATH, member=member)
                bus_proxy.AddMatch(rule)
                made._filters.append(router.filter(rule, queue=_Relay(made._signal)))
        except Exception as exc:
            if not isinstance(exc, LookupError):
                log.info("desktop notifications with buttons: no daemon answered (%s)", exc)
            router.close()
            connection.close()
            return None
        log.info("desktop notifications with buttons: %s", ", ".join(capabilities))
        return made

    def notify(self, summary: str, body: str, actions: Sequence[tuple[str, str]], *, app_name: str) -> int:
        """Show a notification with buttons (``actions``: key, label); its id. Raises on a D-Bus error."""
        from jeepney import DBusAddress, MessageType, new_method_call

        daemon = DBusAddress(PATH, bus_name=NAME, interface=NAME)
        flat = [part for key, label in actions for part in (key, label)]
        hints = {"urgency": ("y", 1), "desktop-entry": ("s", "gputray")}
        call = new_method_call(
            daemon, "Notify", "susssasa{sv}i", (app_name, 0, "", summary, body, flat, hints, -1)
        )
        reply = self._router.send_and_get_reply(call, timeout=CALL_TIMEOUT_S)
        if reply.header.message_type == MessageType.error:
            raise OSError(f"the notification daemon refused: {reply.body}")
        return int(reply.body[0])

    def withdraw(self, note_id: int) -> None:
        """Take a notification off the screen (``CloseNotification``); a daemon that fails is only logged."""
        from jeepney import DBusAddress, new_method_call

        daemon = DBusAddress(PATH, bus_name=NAME, interface=NAME)
        try:
            self._router.send_and_get_reply(
                new_method_call(daemon, "CloseNotification", "u", (note_id,)), timeout=CALL_TIMEOUT_S
            )
        except Exception as exc:
            log.info("notification %d could not be closed (%s)", note_id, exc)

    def _signal(self, msg: Any) -> None:
        """On jeepney's receive thread: ActionInvoked(id, key) or NotificationClosed(id, reason)."""
        from jeepney import HeaderFields

        member = msg.header.fields.get(HeaderFields.member)
        try:
            if member == "ActionInvoked":
                self._on_answer(int(msg.body[0]), str(msg.body[1]))
            elif member == "NotificationClosed":
                self._on_answer(int(msg.body[0]), CLOSED)
        except Exception:  # a receive thread that raised would stop every later answer
            log.exception("a notification answer could not be handled")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for handle in self._filters:
            handle.close()
        self._router.close()
        self._connection.close()
