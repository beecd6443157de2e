"""A resident (an LLM server, ComfyUI) and a GPU an exclusive app took, in the tray's words, en + ja.

The command line says the same in English (``scheduler/resident_words.py``); here every sentence goes
through Qt's translations. The figures (what a resident holds, how long it has been idle) are one
piece, ``resident_figures``, which the panel shows whole (a ``FigureLabel``), never elided;
``resident_figure_templates`` are its widest forms, so its width is reserved before it is shown.
"""

from __future__ import annotations

from gputray.gui.i18n import tr
from gputray.gui.notifications import Notice, short_duration
from gputray.monitor.residents import ResidentView
from gputray.monitor.units import GIB
from gputray.scheduler.client.replies import RoomQuestion

FIGURES_SEPARATOR = " · "


def held_text(resident: ResidentView) -> str:
    """In GiB, as the card's VRAM line (``0.0 GiB`` once it let go); "—" where nothing says."""
    return "—" if resident.held_bytes is None else f"{resident.held_bytes / GIB:.1f} GiB"


def idle_words(resident: ResidentView, now_s: float) -> str:
    """``serving`` while it answers a request, else ``idle 14 min``."""
    if resident.busy:
        return tr("serving")
    return tr("idle {duration}").format(duration=short_duration(resident.idle_s(now_s)))


def resident_figures(resident: ResidentView, now_s: float) -> str:
    """``holds 9.8 GiB · idle 14 min`` (``· serving`` while busy): the part never elided."""
    held = tr("holds {memory}").format(memory=held_text(resident))
    return held + FIGURES_SEPARATOR + idle_words(resident, now_s)


def resident_figure_templates() -> tuple[str, ...]:
    """The widest figures a resident may show, in the current language (digits count as 8s)."""
    held = tr("holds {memory}").format(memory="888.8 GiB")
    longest = tr("{h} h {m:02d} min").format(h=88, m=88)
    return (
        held + FIGURES_SEPARATOR + tr("idle {duration}").format(duration=longest),
        held + FIGURES_SEPARATOR + tr("serving"),
    )


def resident_line(resident: ResidentView, now_s: float) -> str:
    """``ComfyUI holds 9.8 GiB · idle 14 min``: the whole line (tooltips, the dashboard)."""
    return tr("{name} {figures}").format(name=resident.name, figures=resident_figures(resident, now_s))


def resident_tooltip(resident: ResidentView, now_s: float, device_name: str) -> str:
    lines = [tr("{name} on {device}").format(name=resident.name, device=device_name)]
    if resident.models:
        lines.append(tr("models: {models}").format(models=", ".join(resident.models)))
    if resident.port is not None:
        lines.append(tr("port {port}").format(port=resident.port))
    if not resident.answered:
        lines.append(tr("its API does not answer"))
    lines.append(resident_figures(resident, now_s))
    return "\n".join(lines)


def free_label(question: RoomQuestion) -> str:
    """The notification's and the row menu's yes: ``Free ComfyUI's 9.8 GiB and run train.py``."""
    return tr("Free {resident}'s {memory} and run {name}").format(
        resident=question.resident.name,
        memory=held_text(question.resident),
        name=question.task_name or f"#{question.task_id}",
    )


def question_title(question: RoomQuestion, device_name: str) -> str:
    return tr("{name} waits for {device}").format(
        name=question.task_name or f"#{question.task_id}", device=device_name
    )


def question_body(question: RoomQuestion, now_s: float) -> str:
    r = question.resident
    return tr(
        "{resident} holds {memory} there and is {idle}. Free it? It is asked through its own API."
    ).format(resident=r.name, memory=held_text(r), idle=idle_words(r, now_s))


def taken_text(app: str) -> str:
    """The GPU card's and the tooltip's word for a GPU an exclusive app (a game) uses: ``taken by cs2``."""
    return tr("taken by {app}").format(app=app)


def taken_title(app: str, device_name: str) -> str:
    return tr("{app} took {device}").format(app=app, device=device_name)


def taken_body(app: str, device_name: str) -> str:
    return tr("gputray paused its jobs on {device} and starts none there until {app} exits.").format(
        app=app, device=device_name
    )


def given_back_title(device_name: str) -> str:
    return tr("{device} is free again").format(device=device_name)


def given_back_body(app: str, device_name: str) -> str:
    return tr("{app} has exited: gputray's jobs on {device} go on.").format(app=app, device=device_name)


def question_notice(question: RoomQuestion, device_name: str, now_s: float) -> Notice:
    """The ``resident_ask`` notice: the desktop shows it with "Free …" / "Keep waiting" buttons."""
    return Notice(
        "resident_ask",
        question_title(question, device_name),
        question_body(question, now_s),
        key=f"{question.task_id}:resident_ask",
        task_id=question.task_id,
        room=question,
    )


def taken_notice(device: str, app: str, device_name: str) -> Notice:
    return Notice(
        "gpu_taken", taken_title(app, device_name), taken_body(app, device_name), key=f"{device}:taken"
    )


def given_back_notice(device: str, app: str, device_name: str) -> Notice:
    return Notice(
        "gpu_taken", given_back_title(device_name), given_back_body(app, device_name), key=f"{device}:back"
    )
