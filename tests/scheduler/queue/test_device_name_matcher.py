"""One device-name matcher (issue 31): ``--device`` preferences (placement) and ``gputray pause DEVICE``
(the owner) name devices by the same rules, ``queue.device_names``: a key or PCI address in any case,
else a name fragment compared by letters and digits only."""

from __future__ import annotations

from pathlib import Path

import pytest
from real_owner import home_paths, running_owner

from gputray.monitor.backends.simulated import RADEON_780M, RTX_5060_TI
from gputray.scheduler import protocol as rq
from gputray.scheduler.queue.device_names import by_name, devices_named, keyed, squashed
from gputray.scheduler.queue.placement import DeviceState, resolve_pref

INFOS = [RTX_5060_TI, RADEON_780M]
#: What a person may type for each device, and the device it means.
SPELLINGS = [
    ("5060ti", RTX_5060_TI.key),
    ("RTX 5060-Ti", RTX_5060_TI.key),
    ("rtx5060 ti", RTX_5060_TI.key),
    ("PCI:0000:01:00.0", RTX_5060_TI.key),
    ("0000:01:00.0", RTX_5060_TI.key),
    ("780m", RADEON_780M.key),
    ("Radeon 780M", RADEON_780M.key),
    (" radeon-780m ", RADEON_780M.key),
    ("pci:0000:64:00.0", RADEON_780M.key),
]


def test_squashed_keeps_letters_and_digits() -> None:
    assert squashed("GeForce RTX 5060-Ti") == "geforcertx5060ti"


@pytest.mark.parametrize(("typed", "key"), SPELLINGS)
def test_the_matcher(typed: str, key: str) -> None:
    assert [i.key for i in devices_named(typed, INFOS)] == [key]


def test_a_key_wins_over_a_name_and_nothing_matches_nothing() -> None:
    assert keyed("pci:0000:01:00.0", INFOS) == [RTX_5060_TI]
    assert by_name("pci:0000:01:00.0", INFOS) == []  # a key is not a name fragment
    assert devices_named("4090", INFOS) == []
    assert devices_named("--", INFOS) == []  # no letter or digit: names nothing, not everything


@pytest.mark.parametrize(("typed", "key"), SPELLINGS)
def test_placement_prefers_by_the_same_rules(typed: str, key: str) -> None:
    devices = [DeviceState(RTX_5060_TI), DeviceState(RADEON_780M)]
    assert [d.key for d in resolve_pref(typed, devices)] == [key]


def test_the_owner_pauses_by_the_same_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``gputray pause DEVICE`` (``Owner.resolve_device``): every spelling placement takes."""
    paths = home_paths(tmp_path, monkeypatch)
    with running_owner(paths) as owner:
        for typed, key in SPELLINGS:
            assert owner.resolve_device(typed) == key, typed
        paused = owner.handle(rq.Pause(device="RTX 5060-Ti")).paused  # before: only "rtx 5060 ti" worked
        assert paused.devices == frozenset({RTX_5060_TI.key})
        assert owner.resolve_device("cpu") == "cpu" and owner.resolve_device("all") is None
