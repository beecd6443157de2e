"""Which devices a device name typed by a person means: one matcher for every place that takes one
(``--device`` preferences in ``placement.resolve_pref``, ``gputray pause DEVICE`` in the owner and with
no owner, the submit checks), so that a name that works in one works in all.

A name means the device whose key or PCI address it is (``pci:0000:01:00.0``, ``0000:01:00.0``, any
case); else every device whose name holds it, compared by letters and digits only, any case
(``5060ti``, ``RTX 5060-Ti`` and ``rtx5060 ti`` all name a GeForce RTX 5060 Ti; ``780m`` a Radeon 780M).
Words for classes of devices (``nvidia``, ``discrete``, ``cpu``) are the callers' own."""

from __future__ import annotations

import re
from collections.abc import Sequence

from gputray.monitor.records import DeviceInfo


def squashed(text: str) -> str:
    """``RTX 5060-Ti`` → ``rtx5060ti``: letters and digits, lower case, as names are compared."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


def keyed(text: str, infos: Sequence[DeviceInfo]) -> list[DeviceInfo]:
    """The devices whose key or PCI address ``text`` is (any case, spaces around ignored)."""
    wanted = text.strip().lower()
    return [i for i in infos if wanted and (i.key.lower() == wanted or (i.pci_bdf or "").lower() == wanted)]


def by_name(text: str, infos: Sequence[DeviceInfo]) -> list[DeviceInfo]:
    """The devices whose name holds ``text`` (letters and digits only); none for a text without any."""
    fragment = squashed(text)
    return [i for i in infos if fragment and fragment in squashed(i.name)]


def devices_named(text: str, infos: Sequence[DeviceInfo]) -> list[DeviceInfo]:
    """What ``text`` names among ``infos``: the device it is the key of, else those its name fragment
    is in ([] for none)."""
    return keyed(text, infos) or by_name(text, infos)
