"""A stand-in for the desktop's notification daemon (``org.freedesktop.Notifications``) on a private
session bus: the library boundary of the tray's answerable notifications (``gui/desktop_notify.py``).

It speaks the Desktop Notifications Specification 1.2 as GNOME Shell, KDE Plasma, dunst or mako do:
``GetCapabilities`` answers the capabilities given on the command line, ``Notify`` (strictly the
signature ``susssasa{sv}i``, as the real daemons check it) prints the call as one JSON line on stdout
and answers a new id; ``ActionInvoked`` and ``NotificationClosed`` are sent when a line arrives on
stdin (the person clicking a button); ``CloseNotification`` is printed too:

    python fake_notification_server.py actions,body      # prints "notifications-ready" once it owns the name
    stdin: "invoke <id> <action key>"  → ActionInvoked(id, key), then NotificationClosed(id, 2)
           "close <id>"                → NotificationClosed(id, 2)
"""

from __future__ import annotations

import json
import select
import sys

from jeepney import DBusAddress, HeaderFields, Message, MessageType, new_error, new_method_return, new_signal
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import DBusConnection, open_dbus_connection

NAME = "org.freedesktop.Notifications"
PATH = "/org/freedesktop/Notifications"
NOTIFY_SIGNATURE = "susssasa{sv}i"


def main() -> int:
    capabilities = [c for c in sys.argv[1].split(",") if c]
    conn = open_dbus_connection(bus="SESSION")
    conn.send_and_get_reply(message_bus.RequestName(NAME))
    print("notifications-ready", flush=True)
    last_id = 0
    here = DBusAddress(PATH, interface=NAME)
    while True:
        readable, _, _ = select.select([conn.sock, sys.stdin], [], [], 0.5)
        if sys.stdin in readable:
            line = sys.stdin.readline()
            if not line:
                return 0
            words = line.split()
            if words[:1] == ["invoke"]:
                conn.send(new_signal(here, "ActionInvoked", "us", (int(words[1]), words[2])))
            if words[:1] in (["invoke"], ["close"]):
                conn.send(new_signal(here, "NotificationClosed", "uu", (int(words[1]), 2)))
                print(json.dumps({"sent": words}), flush=True)
        while True:  # every message the connection has read, not only the first
            try:
                msg = conn.receive(timeout=0.0)
            except TimeoutError:
                break
            if msg.header.message_type == MessageType.method_call:
                last_id = answer(conn, msg, capabilities, last_id)


def answer(conn: DBusConnection, msg: Message, capabilities: list[str], last_id: int) -> int:
    member = msg.header.fields.get(HeaderFields.member)
    signature = msg.header.fields.get(HeaderFields.signature, "")
    if member == "GetCapabilities":
        conn.send(new_method_return(msg, "as", (capabilities,)))
    elif member == "GetServerInformation":
        conn.send(new_method_return(msg, "ssss", ("stand-in", "gputray tests", "0", "1.2")))
    elif member == "Notify" and signature != NOTIFY_SIGNATURE:
        error = f"Notify takes {NOTIFY_SIGNATURE}, got {signature}"
        print(json.dumps({"refused": error}), flush=True)
        conn.send(new_error(msg, "org.freedesktop.DBus.Error.InvalidArgs", "s", (error,)))
    elif member == "Notify":
        app_name, replaces_id, _icon, summary, body, actions, hints, timeout = msg.body
        last_id += 1
        call = {"id": last_id, "app_name": app_name, "replaces_id": replaces_id, "summary": summary,
                "body": body, "actions": actions, "hints": sorted(hints),
                "expire_timeout": timeout}  # fmt: skip
        print(json.dumps({"notify": call}), flush=True)
        conn.send(new_method_return(msg, "u", (last_id,)))
    elif member == "CloseNotification":
        print(json.dumps({"closed": msg.body[0]}), flush=True)
        conn.send(new_method_return(msg))
        conn.send(new_signal(DBusAddress(PATH, interface=NAME), "NotificationClosed", "uu", (msg.body[0], 3)))
    else:
        conn.send(new_error(msg, "org.freedesktop.DBus.Error.UnknownMethod", "s", (str(member),)))
    return last_id


if __name__ == "__main__":
    raise SystemExit(main())
