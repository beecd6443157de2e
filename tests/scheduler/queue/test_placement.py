from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gputray.monitor.backends.simulated import RADEON_780M, RTX_5060_TI
from gputray.monitor.busy_why import FellOffBus, Lost, Words
from gputray.monitor.records import Sample, Verdict
from gputray.scheduler.queue.placement import (
    DeviceState,
    GiveUp,
    Placement,
    Wait,
    cpu_state,
    place,
    plan,
    resolve_pref,
)
from gputray.scheduler.reasons.render import render
from gputray.scheduler.tasks.records import TaskRecord, TaskSpec

GIB = 1024**3
NOW = 10_000.0
NV = RTX_5060_TI.key
AMD = RADEON_780M.key
LLAMA = "llama-server uses 14.2 GiB, 97 %"


def nvidia(*, busy: str | None = None, used: int = GIB // 2, **kw: Any) -> DeviceState:
    sample = Sample(
        NV, NOW, util_percent=97 if busy else 2, temp_c=50, vram_used_bytes=used, vram_total_bytes=16 * GIB
    )
    verdict = Verdict(NV, busy is not None, (Words(text=busy),) if busy else ())
    return DeviceState(RTX_5060_TI, sample, verdict, **kw)


def radeon(*, busy: str | None = None, gtt_used: int = GIB, **kw: Any) -> DeviceState:
    sample = Sample(
        AMD,
        NOW,
        util_percent=3,
        temp_c=45,
        vram_used_bytes=GIB,
        vram_total_bytes=4 * GIB,
        shared_used_bytes=gtt_used,
        shared_total_bytes=29 * GIB,
    )
    verdict = Verdict(AMD, busy is not None, (Words(text=busy),) if busy else ())
    kw.setdefault("host_ram_free_bytes", 20 * GIB)
    kw.setdefault("host_ram_total_bytes", 32 * GIB)
    return DeviceState(RADEON_780M, sample, verdict, **kw)


def cpu(**kw: Any) -> DeviceState:
    kw.setdefault("host_ram_free_bytes", 20 * GIB)
    kw.setdefault("host_ram_total_bytes", 32 * GIB)
    return cpu_state(**kw)


def task(
    task_id: int = 1,
    *,
    queued_at: float = NOW - 5,
    overtakes: int = 0,
    not_before: float | None = None,
    **spec: Any,
) -> TaskRecord:
    spec.setdefault("device_prefs", ("5060ti", "780m"))
    s = TaskSpec(kind="command", name=spec.pop("name", f"job{task_id}"), argv=("x",), **spec)
    return TaskRecord(
        task_id,
        s,
        "queued",
        submitted_at=queued_at,
        queued_at=queued_at,
        position=task_id,
        overtakes=overtakes,
        not_before=not_before,
    )


def test_first_choice_free_runs_there() -> None:
    d = place(task(), [nvidia(), radeon(), cpu()], now_s=NOW)
    assert d == Placement(NV, "GeForce RTX 5060 Ti")


def test_wait_names_the_device_and_the_external_user() -> None:
    d = place(task(on_busy="wait"), [nvidia(busy=LLAMA), radeon(), cpu()], now_s=NOW)
    assert isinstance(d, Wait)
    assert render(d.reason) == f"waiting for GeForce RTX 5060 Ti: {LLAMA}"
    assert d.device == NV


def test_redirect_goes_to_the_first_free_other_device_and_says_why() -> None:
    d = place(task(on_busy="redirect"), [nvidia(busy=LLAMA), radeon(), cpu()], now_s=NOW)
    assert isinstance(d, Placement) and d.redirected and d.device == AMD
    assert render(d.reason) == f"redirected to Radeon 780M: GeForce RTX 5060 Ti busy ({LLAMA})"


def test_cpu_policy_runs_on_the_cpu() -> None:
    d = place(task(on_busy="cpu"), [nvidia(busy=LLAMA), radeon(), cpu()], now_s=NOW)
    assert isinstance(d, Placement) and d.device == "cpu"
    assert render(d.reason).startswith("on CPU: GeForce RTX 5060 Ti busy")


def test_redirect_waits_when_nothing_is_free_and_lists_every_reason() -> None:
    devices = [nvidia(busy=LLAMA), radeon(running=1, running_names=("upscale (#3)",)), cpu()]
    d = place(task(on_busy="redirect"), devices, now_s=NOW)
    assert isinstance(d, Wait)
    assert render(d.reason) == (
        f"waiting for a free device: GeForce RTX 5060 Ti: {LLAMA}; Radeon 780M: running 'upscale (#3)'"
    )


@pytest.mark.parametrize(
    ("after", "expected"),
    [("redirect", AMD), ("cpu", "cpu"), ("fail", None)],
)
def test_after_max_wait(after: str, expected: str | None) -> None:
    devices = [nvidia(busy=LLAMA), radeon(), cpu()]
    t = task(on_busy="wait", max_wait_s=600, after_max_wait=after, queued_at=NOW - 599)
    assert isinstance(place(t, devices, now_s=NOW), Wait)
    late = place(t, devices, now_s=NOW + 2)
    if expected is None:
        assert isinstance(late, GiveUp)
        assert render(late.reason) == f"gave up after waiting 10 min for GeForce RTX 5060 Ti: {LLAMA}"
    else:
        assert isinstance(late, Placement) and late.device == expected
        assert "after waiting 10 min" in render(late.reason)


def test_one_job_per_gpu_and_the_igpu_stays_serial() -> None:
    d = place(task(device_prefs=("780m",)), [nvidia(), radeon(running=1), cpu()], now_s=NOW)
    assert isinstance(d, Wait) and render(d.reason) == "waiting for Radeon 780M: all its job slots are taken"


def test_discrete_memory_must_fit() -> None:
    t = task(device_prefs=("5060ti",), vram_bytes=6 * GIB)
    assert isinstance(place(t, [nvidia(used=9 * GIB)], now_s=NOW), Placement)
    d = place(t, [nvidia(used=11 * GIB)], now_s=NOW)
    assert (
        isinstance(d, Wait)
        and render(d.reason) == "waiting for GeForce RTX 5060 Ti: needs 6.0 GiB, 5.0 GiB VRAM free"
    )
    # Memory our just-started job will take counts too.
    assert isinstance(place(t, [nvidia(used=9 * GIB, extra_used_bytes=2 * GIB)], now_s=NOW), Wait)


def test_igpu_memory_is_gtt_plus_carve_out_and_bounded_by_system_ram() -> None:
    t = task(device_prefs=("780m",), vram_bytes=8 * GIB)
    assert isinstance(place(t, [radeon()], now_s=NOW), Placement)
    d = place(t, [radeon(host_ram_free_bytes=6 * GIB)], now_s=NOW)
    assert isinstance(d, Wait) and "needs 8.0 GiB, 6.0 GiB GTT + carve-out free" in render(d.reason)
    d = place(t, [radeon(gtt_used=26 * GIB)], now_s=NOW)
    assert isinstance(d, Wait) and "6.0 GiB GTT + carve-out free" in render(d.reason)


def test_a_task_no_device_can_hold_gives_up_instead_of_waiting_forever() -> None:
    t = task(device_prefs=("5060ti",), vram_bytes=40 * GIB)
    d = place(t, [nvidia(), radeon(), cpu()], now_s=NOW)
    assert (
        isinstance(d, GiveUp)
        and render(d.reason) == "no device can run it: needs 40.0 GiB, GeForce RTX 5060 Ti has 15.9 GiB"
    )


def test_too_big_for_the_first_choice_but_redirectable() -> None:
    t = task(device_prefs=("5060ti", "780m"), on_busy="redirect", vram_bytes=20 * GIB)
    d = place(t, [nvidia(), radeon(gtt_used=GIB), cpu()], now_s=NOW)
    assert isinstance(d, Placement) and d.device == AMD and "needs 20.0 GiB" in render(d.reason)


def test_lost_paused_hot_and_missing_devices() -> None:
    lost = dataclasses.replace(
        nvidia(),
        sample=Sample(NV, NOW, "lost", FellOffBus()),
        verdict=Verdict(NV, True, (Lost(device="GeForce RTX 5060 Ti", why=FellOffBus()),)),
    )
    got = place(task(), [lost], now_s=NOW)
    assert isinstance(got, Wait) and (got.device, got.accepts) == (NV, (NV,))
    assert render(got.reason) == "waiting for GeForce RTX 5060 Ti: lost: fell off the bus"
    d = place(task(), [nvidia(paused=True)], now_s=NOW)
    assert isinstance(d, Wait) and render(d.reason) == "waiting for GeForce RTX 5060 Ti: paused"
    d = place(task(), [nvidia(paused=True, taken_by="cs2")], now_s=NOW)  # a game took it
    assert isinstance(d, Wait)
    taken = "waiting for GeForce RTX 5060 Ti: taken by cs2: no job starts there until it exits"
    assert render(d.reason) == taken
    ja = render(d.reason, "ja")
    assert ja.endswith("cs2 が使用中: 終了するまでジョブは開始しません"), ja
    hot = dataclasses.replace(radeon(), verdict=None, sample=Sample(AMD, NOW, temp_c=93.0))
    d = place(task(device_prefs=("780m",)), [hot], now_s=NOW)
    assert isinstance(d, Wait) and render(d.reason) == "waiting for Radeon 780M: hot: 93 °C, limit 90 °C"
    d = place(task(device_prefs=("5060ti",)), [radeon(), cpu()], now_s=NOW)  # the eGPU is unplugged
    assert isinstance(d, Wait) and render(d.reason) == "waiting for 5060ti: not present"


def test_needs_are_checked_against_what_the_doctor_proved() -> None:
    t = task(device_prefs=("780m", "cpu"), on_busy="redirect", needs=("fp16",))
    d = place(t, [radeon(capabilities=frozenset({"fp32"})), cpu()], now_s=NOW)
    assert isinstance(d, Placement) and d.device == "cpu" and "lacks fp16" in render(d.reason)


def test_time_gates() -> None:
    devices = [nvidia(), radeon(), cpu()]
    at = dt.datetime(2026, 6, 1, 1, 0).timestamp()
    d = place(task(start_at=at), devices, now_s=at - 3600)
    assert isinstance(d, Wait) and render(d.reason) == "starts at 01:00" and d.until_s == at
    noon = dt.datetime(2026, 6, 1, 12, 0).timestamp()
    d = place(task(window="01:00-07:00"), devices, now_s=noon)
    assert isinstance(d, Wait) and render(d.reason) == "waits for its window 01:00–07:00"
    assert d.until_s == dt.datetime(2026, 6, 2, 1, 0).timestamp()
    assert isinstance(place(task(window="01:00-07:00"), devices, now_s=noon - 8 * 3600), Placement)
    d = place(task(not_before=NOW + 30), devices, now_s=NOW)
    assert isinstance(d, Wait) and render(d.reason) == "retry in 30 s"


def test_preference_classes_and_names() -> None:
    devices = [radeon(), nvidia(), cpu()]
    assert [d.key for d in resolve_pref("nvidia", devices)] == [NV]
    assert [d.key for d in resolve_pref("amd", devices)] == [AMD]
    assert [d.key for d in resolve_pref("integrated", devices)] == [AMD]
    assert [d.key for d in resolve_pref("discrete", devices)] == [NV]
    assert [d.key for d in resolve_pref("gpu", devices)] == [NV, AMD]
    assert [d.key for d in resolve_pref("5060 Ti", devices)] == [NV]
    assert [d.key for d in resolve_pref("780M", devices)] == [AMD]
    assert [d.key for d in resolve_pref(AMD.upper(), devices)] == [AMD]
    assert [d.key for d in resolve_pref("cpu", devices)] == ["cpu"]
    assert resolve_pref("4090", devices) == []
    # No preference: discrete first, then integrated.
    assert place(task(device_prefs=()), devices, now_s=NOW) == Placement(NV, "GeForce RTX 5060 Ti")


def test_a_plan_takes_slots_as_it_goes() -> None:
    tasks = [task(1, device_prefs=("5060ti",)), task(2, device_prefs=("5060ti",))]
    result = plan(tasks, [nvidia(), radeon(), cpu()], now_s=NOW)
    (_, first), (_, second) = result.decisions
    assert isinstance(first, Placement) and first.device == NV
    assert (
        isinstance(second, Wait)
        and render(second.reason) == "waiting for GeForce RTX 5060 Ti: running 'job1 (#1)'"
    )


def test_a_big_head_task_does_not_block_a_small_one_for_another_device() -> None:
    big = task(1, device_prefs=("5060ti",), vram_bytes=14 * GIB)
    small = task(2, device_prefs=("780m",), vram_bytes=GIB)
    result = plan([big, small], [nvidia(used=4 * GIB), radeon(), cpu()], now_s=NOW)
    assert isinstance(result.decisions[0][1], Wait)
    assert isinstance(result.decisions[1][1], Placement)
    assert result.overtakes == {}  # it took a device the big one would not use


def test_a_big_task_is_overtaken_at_most_the_limit_then_holds_its_device() -> None:
    """Small jobs keep fitting next to an external 4 GiB user; the big one needs the whole card."""
    big = task(1, device_prefs=("5060ti",), vram_bytes=13 * GIB)
    devices = [nvidia(used=4 * GIB, slots=2), cpu()]
    overtakes = 0
    started_small = 0
    for n in range(10):
        small = task(100 + n, device_prefs=("5060ti",), vram_bytes=GIB)
        head = dataclasses.replace(big, overtakes=overtakes)
        result = plan([head, small], devices, now_s=NOW)
        overtakes = result.overtakes.get(big.id, overtakes)
        if isinstance(result.decisions[1][1], Placement):
            started_small += 1
        else:
            got = result.decisions[1][1]
            assert isinstance(got, Wait) and (got.device, got.accepts) == (NV, (NV,))
            assert (
                render(got.reason)
                == "waiting for GeForce RTX 5060 Ti: held for task #1, which waited longest"
            )
            assert result.held == {NV: big.id}
    assert started_small == 3  # the default overtake limit
    # Once the external user leaves, the big task gets the card before any new small one.
    result = plan(
        [dataclasses.replace(big, overtakes=overtakes), task(200, device_prefs=("5060ti",))],
        [nvidia(used=GIB // 2, slots=2), cpu()],
        now_s=NOW,
    )
    assert isinstance(result.decisions[0][1], Placement)


_util = st.one_of(st.none(), st.floats(0, 100))
_bytes = st.one_of(st.none(), st.integers(0, 64 * GIB))


@st.composite
def device_states(draw: st.DrawFn) -> list[DeviceState]:
    out = []
    for info in (RTX_5060_TI, RADEON_780M):
        if draw(st.booleans()):
            sample = Sample(
                info.key,
                NOW,
                draw(st.sampled_from(["ok", "lost", "asleep", "unavailable"])),
                util_percent=draw(_util),
                temp_c=draw(st.one_of(st.none(), st.floats(0, 120))),
                vram_used_bytes=draw(_bytes),
                vram_total_bytes=draw(_bytes),
                shared_used_bytes=draw(_bytes),
                shared_total_bytes=draw(_bytes),
            )
            verdict = draw(
                st.one_of(
                    st.none(),
                    st.builds(
                        Verdict,
                        st.just(info.key),
                        st.booleans(),
                        st.lists(st.text(max_size=10), max_size=2).map(tuple),
                    ),
                )
            )
            out.append(
                DeviceState(
                    info,
                    sample,
                    verdict,
                    running=draw(st.integers(0, 2)),
                    paused=draw(st.booleans()),
                    host_ram_free_bytes=draw(_bytes),
                    capabilities=draw(st.one_of(st.none(), st.just(frozenset({"fp16"})))),
                )
            )
    if draw(st.booleans()):
        out.append(cpu(running=draw(st.integers(0, 1))))
    return out


@settings(max_examples=300, deadline=None)
@given(
    device_states(),
    st.lists(
        st.sampled_from(["5060ti", "780m", "cpu", "nvidia", "amd", "integrated", "gpu", "x"]), max_size=3
    ),
    st.sampled_from(["wait", "redirect", "cpu"]),
    st.sampled_from(["redirect", "cpu", "fail"]),
    st.one_of(st.none(), st.floats(0, 100)),
    _bytes,
    st.lists(st.sampled_from(["fp16", "bf16"]), max_size=1),
)
def test_place_always_decides_with_a_reason(
    devices: list[DeviceState],
    prefs: list[str],
    on_busy: str,
    after: str,
    max_wait: float | None,
    vram: int | None,
    needs: list[str],
) -> None:
    t = task(
        device_prefs=tuple(prefs),
        on_busy=on_busy,
        after_max_wait=after,
        max_wait_s=max_wait,
        vram_bytes=vram,
        needs=tuple(needs),
        queued_at=NOW - 50,
    )
    d = place(t, devices, now_s=NOW)
    assert isinstance(d, Placement | Wait | GiveUp)
    if isinstance(d, Placement):
        chosen = next(x for x in devices if x.key == d.device)
        assert not chosen.paused and chosen.running < chosen.slots
        assert not d.redirected or render(d.reason)  # a redirect always says why
    else:
        assert render(d.reason)


def test_with_two_slots_a_second_job_starts_only_if_its_memory_fits() -> None:
    """More slots let jobs share the 5060 Ti, but the memory each declares still has to fit: with 2 of
    16 GiB used, two 6 GiB jobs start and a third waits, saying why, though a slot is open."""
    tasks = [task(i, device_prefs=("5060ti",), vram_bytes=6 * GIB) for i in (1, 2, 3)]
    result = plan(tasks, [nvidia(slots=3, used=2 * GIB)], now_s=NOW)
    kinds = [type(d).__name__ for _, d in result.decisions]
    assert kinds == ["Placement", "Placement", "Wait"]
    wait = result.decisions[2][1]
    assert isinstance(wait, Wait) and "needs 6.0 GiB, 2.0 GiB VRAM free" in render(wait.reason)
    one_slot = plan(tasks[:2], [nvidia(slots=1, used=2 * GIB)], now_s=NOW)
    assert [type(d).__name__ for _, d in one_slot.decisions] == ["Placement", "Wait"]
