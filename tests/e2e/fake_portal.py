"""A stand-in for the XDG desktop portal's Settings interface on a private session bus.

Qt's ``xdgdesktopportal`` platform theme asks ``org.freedesktop.portal.Desktop`` for
``org.freedesktop.appearance color-scheme`` (1 = prefer dark, 2 = prefer light) and listens for
``SettingChanged``: this is how a GNOME or KDE desktop tells a Qt app its colour scheme. This script
answers those calls with the scheme given on the command line, and sends ``SettingChanged`` when a
line ``dark`` or ``light`` arrives on stdin (the desktop's switch).

    python fake_portal.py dark|light      # prints "portal-ready" once it owns the name
"""

from __future__ import annotations

import select
import sys

from jeepney import DBusAddress, HeaderFields, Message, MessageType, new_error, new_method_return, new_signal
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import DBusConnection, open_dbus_connection

PATH = "/org/freedesktop/portal/desktop"
SETTINGS = "org.freedesktop.portal.Settings"
APPEARANCE = "org.freedesktop.appearance"
SCHEMES = {"dark": 1, "light": 2}


def main() -> int:
    scheme = SCHEMES[sys.argv[1]]
    conn = open_dbus_connection(bus="SESSION")
    conn.send_and_get_reply(message_bus.RequestName("org.freedesktop.portal.Desktop"))
    print("portal-ready", flush=True)
    while True:
        readable, _, _ = select.select([conn.sock, sys.stdin], [], [], 0.5)
        if sys.stdin in readable:
            line = sys.stdin.readline()
            if not line:
                return 0
            if line.strip() in SCHEMES:
                scheme = SCHEMES[line.strip()]
                signal = new_signal(DBusAddress(PATH, interface=SETTINGS), "SettingChanged", "ssv",
                                    (APPEARANCE, "color-scheme", ("u", scheme)))  # fmt: skip
                conn.send(signal)
                print(f"scheme-sent {line.strip()}", flush=True)
        while True:  # every message the connection has read, not only the first
            try:
                msg = conn.receive(timeout=0.0)
            except TimeoutError:
                break
            if msg.header.message_type == MessageType.method_call:
                answer(conn, msg, scheme)


def answer(conn: DBusConnection, msg: Message, scheme: int) -> None:
    member = msg.header.fields.get(HeaderFields.member)
    if member == "Read":  # the old call: a variant inside a variant
        conn.send(new_method_return(msg, "v", (("v", ("u", scheme)),)))
    elif member == "ReadOne":
        conn.send(new_method_return(msg, "v", (("u", scheme),)))
    elif member == "ReadAll":
        reply = [(APPEARANCE, [("color-scheme", ("u", scheme))])]
        conn.send(new_method_return(msg, "a{sa{sv}}", (reply,)))
    else:  # no file chooser or anything else here: Qt falls back to its own dialogs
        conn.send(new_error(msg, "org.freedesktop.DBus.Error.UnknownMethod", "s", (str(member),)))


if __name__ == "__main__":
    raise SystemExit(main())
