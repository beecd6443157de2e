"""``[metrics] listen``: where the Prometheus endpoint listens, and whether it may listen there.

Off by default (``listen = ""``). A loopback address (``127.0.0.1:9835``, ``[::1]:9835``,
``localhost:9835``, or a bare port, which means 127.0.0.1) is served as it is: only this machine reaches
it. Any other address (``0.0.0.0:9835``, a LAN address, a host name) exposes the queue's names and the
machine's GPUs to the network, so it is served only with ``[metrics] token`` set (at least 16
characters; Prometheus sends it as ``authorization: credentials``), and refused otherwise: the config
check names the problem and the endpoint stays off. Pure: no sockets here.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

DEFAULT_PORT = 9835
MIN_TOKEN_CHARS = 16


class ListenError(ValueError):
    """A ``listen`` value that is no address, or one that may not be served as configured."""


@dataclass(frozen=True)
class ListenAddress:
    host: str  # as bound: "127.0.0.1", "::1", "0.0.0.0", "localhost", "gpu-box.lan"
    port: int  # 0: any free port (the owner's log names the one it got)

    @property
    def loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False  # a host name other than localhost may resolve to anything

    @property
    def ipv6(self) -> bool:
        return ":" in self.host

    def url(self, port: int | None = None) -> str:
        host = f"[{self.host}]" if self.ipv6 else self.host
        return f"http://{host}:{self.port if port is None else port}/metrics"


def parse_listen(text: str) -> ListenAddress:
    """``HOST:PORT``, ``[IPV6]:PORT`` or ``PORT``. ListenError says what is wrong, in words."""
    value = text.strip()
    if value.isdigit():
        host, port_text = "127.0.0.1", value
    elif value.startswith("["):
        close = value.find("]")
        if close < 0 or value[close + 1 : close + 2] != ":":
            raise ListenError(f"{text!r} is not [IPV6]:PORT (for example [::1]:{DEFAULT_PORT})")
        host, port_text = value[1:close], value[close + 2 :]
    else:
        host, sep, port_text = value.rpartition(":")
        if not sep or not host or ":" in host:
            raise ListenError(
                f"{text!r} is not HOST:PORT (for example 127.0.0.1:{DEFAULT_PORT}, or [::1]:{DEFAULT_PORT})"
            )
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ListenError(f"{text!r}: the port must be a number from 0 to 65535")
    if ":" in host or value.startswith("["):
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ListenError(f"{text!r}: {host!r} is not an IPv6 address") from None
    return ListenAddress(host, int(port_text))


def checked_listen(listen: str, token: str) -> ListenAddress | None:
    """The address to serve on, None when the endpoint is off; ListenError when it may not be served:
    a malformed address, a short token, or an address beyond this machine without a token."""
    if not listen.strip():
        return None
    address = parse_listen(listen)
    if token and len(token) < MIN_TOKEN_CHARS:
        raise ListenError(f"the token must be at least {MIN_TOKEN_CHARS} characters long")
    if not address.loopback and not token:
        raise ListenError(
            f"{listen!r} is reachable from other machines, so it is served only with a token: set "
            f'[metrics] token = "..." ({MIN_TOKEN_CHARS}+ characters; Prometheus sends it as '
            f"authorization credentials), or listen on 127.0.0.1:{address.port}"
        )
    return address
