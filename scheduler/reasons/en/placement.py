"""English words for what placement decided: redirects, waits, gave-ups, windows, ``--prefer`` outlooks."""

from __future__ import annotations

from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.en.common import EN, _aside
from gputray.scheduler.reasons.say import Say

says = EN.says


@says(c.FirstBusy)
def _first_busy(r: c.FirstBusy, s: Say) -> str:
    return f"{r.label} busy{_aside(s(r.why))}"


@says(c.FirstCannot)
def _first_cannot(r: c.FirstCannot, s: Say) -> str:
    return f"{r.label} cannot run it{_aside(s(r.why))}"


@says(c.FirstAbsent)
def _first_absent(r: c.FirstAbsent, s: Say) -> str:
    return f"{r.label} not present"


@says(c.NotPresent)
def _not_present(r: c.NotPresent, s: Say) -> str:
    return "not present"


@says(c.Redirected)
def _redirected(r: c.Redirected, s: Say) -> str:
    after = f" after waiting {s.duration(r.waited_s)}" if r.waited_s is not None else ""
    where = "on CPU" if r.to_cpu else f"redirected to {r.target}"
    return f"{where}{after}: {s(r.first)}"


@says(c.NoDeviceCanRun)
def _no_device(r: c.NoDeviceCanRun, s: Say) -> str:
    return f"no device can run it: {s.join(r.why)}"


@says(c.GaveUp)
def _gave_up(r: c.GaveUp, s: Say) -> str:
    label = f" for {r.label}" if r.label is not None else ""
    return f"gave up after waiting {s.duration(r.waited_s)}{label}: {s(r.why)}"


@says(c.WaitingFor)
def _waiting_for(r: c.WaitingFor, s: Say) -> str:
    return f"{s.tense('waiting', 'waited')} for {r.label}: {s(r.why)}"


@says(c.WaitingForAny)
def _waiting_any(r: c.WaitingForAny, s: Say) -> str:
    return f"{s.tense('waiting', 'waited')} for a free device: {s.join(r.why)}"


@says(c.RetryIn)
def _retry_in(r: c.RetryIn, s: Say) -> str:
    return f"retry in {s.duration(r.delay_s)}"


@says(c.StartsAt)
def _starts_at(r: c.StartsAt, s: Say) -> str:
    return f"starts at {s.clock(r.at_s, r.with_date)}"


@says(c.WindowWait)
def _window(r: c.WindowWait, s: Say) -> str:
    return f"{s.tense('waits', 'waited')} for its window {r.window}"


@says(c.Unestimated)
def _unestimated(r: c.Unestimated, s: Say) -> str:
    return f"{r.prefer}: no earlier run of this job to estimate from; {s(r.then)}"


def _outlook(o: c.Outlook, s: Say, energy: bool) -> str:
    kj = f", {o.energy_j / 1000:.1f} kJ" if energy and o.energy_j is not None else ""
    frees, finishes = s.tense("frees", "would free"), s.tense("finishes", "would finish")
    if o.wait_s is None:
        text = f"{o.device} busy, free time unknown"
    elif o.wait_s > 0:
        text = f"{o.device} {frees} in {s.about(o.wait_s)}, finish{'es' if not s.finished else ''} in "
        text += f"{s.about(o.wait_s + o.run_s)}{kj}"
    else:
        text = f"{o.device} {finishes} in {s.about(o.run_s)}{kj}"
    return text + (f", past {o.past_factor:g}× the fastest finish" if o.past_factor is not None else "")


@says(c.Preferred)
def _preferred(r: c.Preferred, s: Say) -> str:
    doing = s.tense("running there", "ran there") if r.starts else s.tense("waiting for it", "waited for it")
    mine = f"{_outlook(r.chosen, s, r.energy)}: {doing}"
    others = "; ".join(_outlook(o, s, r.energy) for o in r.others)
    return f"{r.prefer}: {others}; {mine}" if others else f"{r.prefer}: {mine}"
