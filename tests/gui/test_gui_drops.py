from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from pytestqt.qtbot import QtBot

from gputray.gui.drops import DropChoice, DropConfirmDialog, DropPlan, handle_drop, plan_drop, tool_check
from gputray.gui.gui_state import GuiState
from gputray.scheduler.tasks.recipes import load_recipes
from gputray.scheduler.tasks.records import TaskPatch


def files(tmp_path: Path) -> dict[str, Path]:
    out = {
        "png": tmp_path / "a'; touch pwned #.png",
        "png2": tmp_path / "写真 1.PNG",
        "py": tmp_path / "train model.py",
        "txt": tmp_path / "notes.txt",
        "dir": tmp_path / "folder",
    }
    for k, p in out.items():
        if k == "dir":
            p.mkdir()
        else:
            p.write_text("x")
    return out


def test_plan_groups_by_type_and_explains_the_rest(tmp_path: Path) -> None:
    f = files(tmp_path)
    items = [
        str(f["png"]),
        f["png2"].as_uri(),
        str(f["py"]),
        str(f["txt"]),
        str(f["dir"]),
        str(tmp_path / "gone.png"),
    ]
    plan = plan_drop(items, load_recipes())
    kinds = {g.file_type: g for g in plan.groups}
    assert set(kinds) == {".png", ".py"}
    assert kinds[".png"].files == (f["png"], f["png2"]) and kinds[".png"].recipes[0] == "upscale-image"
    assert kinds[".py"].recipes[0] == "torch"
    assert plan.problems == (
        "notes.txt: no recipe handles .txt files",
        "folder is a folder: drop the files inside it instead",
        f"{tmp_path / 'gone.png'} does not exist",
    )


def test_several_files_several_jobs_and_remembered_choice(tmp_path: Path) -> None:
    f = files(tmp_path)
    state = GuiState(tmp_path / "state.json")
    calls: list[tuple[list[str], str | None, TaskPatch]] = []
    asked: list[DropPlan] = []

    def submit(paths: list[str], recipe: str | None, overrides: TaskPatch) -> list[Any]:
        calls.append((paths, recipe, overrides))
        return list(range(len(calls) * 10, len(calls) * 10 + len(paths)))

    def ask(plan: DropPlan, known: Any) -> dict[str, DropChoice]:
        asked.append(plan)
        return {g.file_type: DropChoice(g.recipes[0], "integrated", remember=True) for g in plan.groups}

    out = handle_drop(
        [str(f["png"]), str(f["png2"]), str(f["txt"])],
        recipes=load_recipes(),
        submit=submit,
        ask=ask,
        state=state,
    )
    assert out.task_ids == [10, 11]
    # the dialog is told which files it leaves out (it lists them), so no message repeats them after
    assert asked[0].problems == ("notes.txt: no recipe handles .txt files",)
    assert out.messages == []
    assert calls[0] == (
        [str(f["png"]), str(f["png2"])],
        "upscale-image",
        TaskPatch(device_prefs=("integrated",), on_busy="wait"),
    )
    # the next .png drop goes straight through with the remembered choice; a .py still asks
    out2 = handle_drop(
        [str(f["png"]), str(f["py"])], recipes=load_recipes(), submit=submit, ask=ask, state=state
    )
    assert len(asked) == 2 and [g.file_type for g in asked[1].groups] == [".py"]
    assert calls[1][1:] == ("upscale-image", TaskPatch(device_prefs=("integrated",), on_busy="wait"))
    assert len(out2.task_ids) == 2
    assert GuiState(tmp_path / "state.json").get("drop_choices")[".png"] == {
        "recipe": "upscale-image",
        "policy": "integrated",
    }


def test_submit_errors_and_cancel_lose_nothing_silently(tmp_path: Path) -> None:
    f = files(tmp_path)

    def failing(paths: list[str], recipe: str | None, overrides: TaskPatch) -> list[Any]:
        raise RuntimeError("realesrgan-ncnn-vulkan is not installed")

    out = handle_drop(
        [str(f["png"])], recipes=load_recipes(), submit=failing, ask=lambda p, k: {}, state=None
    )
    assert out.messages == ["realesrgan-ncnn-vulkan is not installed"] and out.task_ids == []
    cancelled = handle_drop([str(f["png"])], recipes=load_recipes(), submit=failing, ask=lambda p, k: None)
    assert cancelled.cancelled and cancelled.messages == []


def test_confirm_dialog_offers_recipe_and_policy(qtbot: QtBot, tmp_path: Path) -> None:
    f = files(tmp_path)
    plan = plan_drop([str(f["png"]), str(f["py"])], load_recipes())
    dialog = DropConfirmDialog(plan, {".py": DropChoice("torch", "cpu", True)})
    qtbot.addWidget(dialog)
    _recipe_box, policy_box, remember = dialog.rows[".png"]
    policy_box.setCurrentIndex(policy_box.findData("redirect"))
    remember.setChecked(True)
    choices = dialog.choices()
    assert choices[".png"] == DropChoice("upscale-image", "redirect", True)
    assert choices[".py"] == DropChoice("torch", "cpu", False)


def test_confirm_dialog_says_what_will_not_be_queued_before_anything_is(qtbot: QtBot, tmp_path: Path) -> None:
    """A missing program (with where to get it) and every file no recipe takes are named in the
    dialog itself; those rows are left out, and Queue is off when nothing would be queued."""
    if shutil.which("realesrgan-ncnn-vulkan"):
        pytest.skip("realesrgan-ncnn-vulkan is installed here: the upscale recipe can run")
    f = files(tmp_path)
    recipes = load_recipes()
    only_bad = plan_drop([str(f["png"]), str(f["txt"]), str(f["dir"])], recipes)
    dialog = DropConfirmDialog(only_bad, {}, check=tool_check(recipes))
    qtbot.addWidget(dialog)
    status = dialog.status[".png"].text()
    assert "realesrgan-ncnn-vulkan is not installed" in status
    assert "Get it: https://github.com/xinntao/Real-ESRGAN-ncnn-vulkan/releases" in status
    assert dialog.left_out.text().splitlines() == [
        "Not queued:",
        "• notes.txt: no recipe handles .txt files",
        "• folder is a folder: drop the files inside it instead",
    ]
    assert not dialog.ok.isEnabled()
    assert dialog.summary.text().startswith("0 files will become 0 jobs.")  # Qt's plural forms
    assert "3 of the 3 dropped items will not be queued" in dialog.summary.text()
    # with a file that can run, Queue is on and only that one is queued
    mixed = plan_drop([str(f["png"]), str(f["py"])], recipes)
    dialog = DropConfirmDialog(mixed, {}, check=tool_check(recipes))
    qtbot.addWidget(dialog)
    assert dialog.ok.isEnabled() and dialog.status[".py"].isHidden()
    choices = dialog.choices()
    assert choices[".png"].skip and not choices[".py"].skip
    submitted: list[str | None] = []

    def submit(paths: list[str], recipe: str | None, overrides: TaskPatch) -> list[Any]:
        submitted.append(recipe)
        return [1]

    out = handle_drop([str(f["png"]), str(f["py"])], recipes=recipes, submit=submit, ask=lambda p, k: choices)
    assert submitted == ["torch"] and out.task_ids == [1] and out.messages == []


def test_a_drop_whose_recipe_makes_no_task_of_the_file_says_why_in_the_trays_language(
    qtbot: QtBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#31: a recipe that makes no task of one dropped file (here its memory need, per file byte, is over
    the 1 PiB limit) was refused in the task check's English inside the Japanese tray. The in-process
    owner's refusal carries the code; the drop words it in the language shown."""
    from real_owner import home_paths, running_owner

    from gputray.gui.i18n import install_language
    from gputray.scheduler import protocol as rq

    paths = home_paths(tmp_path, monkeypatch)
    paths.config_dir.mkdir(parents=True, exist_ok=True)
    (paths.config_dir / "recipes.toml").write_text(
        '[[recipe]]\nname = "huge"\npatterns = ["*.bin"]\nargv = ["true", "{file}"]\n'
        "vram_per_file_byte = 1e15\n",
        encoding="utf-8",
    )
    dropped = tmp_path / "weights.bin"
    dropped.write_bytes(b"12")
    with running_owner(paths) as owner:

        def submit(files: list[str], recipe: str | None, overrides: TaskPatch) -> list[Any]:
            reply = owner.handle(rq.SubmitFiles(files=files, recipe=recipe, overrides=overrides))
            return [t.id for t in reply.tasks]

        said = {}
        try:
            for language in ("en", "ja"):
                assert install_language(language)
                out = handle_drop([str(dropped)], recipes=load_recipes(), submit=submit, ask=None, state=None)
                assert out.task_ids == [] and len(out.messages) == 1
                said[language] = out.messages[0]
        finally:
            install_language("en")
        assert owner.handle(rq.Queue()).tasks == ()  # nothing was queued
    assert said["en"] == (
        "recipe 'huge' for weights.bin: key 'vram': a size must be between 0 and 1 PiB "
        "(1125899906842624 bytes), got 2e+15"
    )
    assert said["ja"] == (
        "weights.bin へのレシピ「huge」: キー 'vram': サイズは 0 から 1 PiB（1125899906842624 バイト）"
        "までにしてください（値: 2e+15）"
    )
