from __future__ import annotations

import re
import stat
import sys
from pathlib import Path

import pytest

from gputray.scheduler.jobs.invocation import placeholder_values, render_argv
from gputray.scheduler.tasks.recipes import (
    RecipeError,
    SubmitError,
    ToolNotFound,
    load_recipes,
    specs_for_files,
)
from gputray.scheduler.tasks.records import TaskPatch

HOSTILE = [
    "a'; touch pwned #.png",
    "with space.png",
    'quo"te.png',
    "semi;colon.png",
    "日本語の画像.png",
    "$(reboot).png",
]


def fake_tool(bin_dir: Path, name: str) -> Path:
    bin_dir.mkdir(exist_ok=True)
    path = bin_dir / name
    path.write_text(f"#!{sys.executable}\nimport sys\nprint(sys.argv)\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GPUTRAY_HOME", str(tmp_path / "home"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))  # nothing else: every tool is missing unless faked
    return tmp_path


def test_shipped_recipes_cover_scripts_images_videos_and_models(home: Path) -> None:
    names = {r.name: r for r in load_recipes()}
    assert {"torch", "upscale-image", "upscale-video", "llama-bench"} <= set(names)
    assert names["upscale-image"].matches(Path("PHOTO.JPG"))
    assert names["upscale-video"].matches(Path("clip.mkv"))
    assert names["llama-bench"].matches(Path("qwen.gguf"))


def test_every_shipped_recipe_says_its_words_in_japanese_too(home: Path) -> None:
    """The tray shows a recipe's description and install hint in Japanese from the recipe itself
    (``description_ja``, ``install_hint_ja``), not by matching its English; English stays the default."""
    japanese = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")
    for r in load_recipes():
        assert r.description and japanese.search(r.described("ja")), r.name
        assert r.described("en") == r.description
        if r.install_hint is not None:
            assert japanese.search(r.hint("ja") or ""), r.name
            assert r.hint("en") == r.install_hint
    config = home / "home" / "config"
    config.mkdir(parents=True)
    (config / "recipes.toml").write_text(
        '[[recipe]]\nname = "mine"\npatterns = ["*.x"]\nkind = "command"\nargv = ["t", "{file}"]\n'
        'description = "Mine"\n',
        encoding="utf-8",
    )
    (mine,) = [r for r in load_recipes() if r.name == "mine"]
    assert mine.described("ja") == "Mine" and mine.hint("ja") is None  # none in Japanese: the English
    (config / "recipes.toml").write_text(
        '[[recipe]]\nname = "mine"\nkind = "command"\nargv = ["t"]\ndescription_ja = 3\n', encoding="utf-8"
    )
    with pytest.raises(RecipeError, match=r"recipe 'mine': key 'description_ja': must be a string"):
        load_recipes()


def test_python_file_becomes_a_torch_job(home: Path) -> None:
    script = home / "my job.py"
    script.write_text("print('hi')\n")
    (spec,) = specs_for_files([script])
    assert spec.kind == "torch" and spec.recipe == "torch"
    assert spec.script == str(script.resolve()) and spec.cwd == str(home.resolve())
    assert spec.name == "my job.py"
    assert render_argv(spec, placeholder_values(spec, device_key="cpu", vk_index=None), python="/py") == [
        "/py",
        str(script.resolve()),
    ]


def test_missing_tool_is_named_at_submit_time(home: Path) -> None:
    image = home / "cat.png"
    image.write_bytes(b"png")
    with pytest.raises(ToolNotFound) as info:
        specs_for_files([image])
    assert info.value.tool == "realesrgan-ncnn-vulkan"
    assert "'realesrgan-ncnn-vulkan' is not installed or not on PATH" in str(info.value)
    assert "Real-ESRGAN" in str(info.value)  # where to get it


def test_image_upscale_argv_keeps_hostile_names_as_single_arguments(home: Path) -> None:
    fake_tool(home / "bin", "realesrgan-ncnn-vulkan")
    files = []
    for name in HOSTILE:
        f = home / name
        f.write_bytes(b"img")
        files.append(f)
    specs = specs_for_files(files)
    for f, spec in zip(files, specs, strict=True):
        assert spec.kind == "vulkan"
        argv = render_argv(spec, placeholder_values(spec, device_key="pci:0000:01:00.0", vk_index=1))
        stem = f.resolve().stem
        assert argv == [
            "realesrgan-ncnn-vulkan",
            "-i",
            str(f.resolve()),
            "-o",
            str(f.resolve().parent / f"{stem}_x4.png"),
            "-s",
            "4",
            "-g",
            "1",
        ]
    assert not (home / "pwned").exists()


def test_video_uses_the_vulkan_device_index(home: Path) -> None:
    fake_tool(home / "bin", "ffmpeg")
    video = home / "clip.mp4"
    video.write_bytes(b"v")
    (spec,) = specs_for_files([video])
    argv = render_argv(spec, placeholder_values(spec, device_key="pci:0000:64:00.0", vk_index=2))
    assert argv[0] == "ffmpeg"
    assert "vulkan=vk:2" in argv
    assert argv[argv.index("-i") + 1] == str(video.resolve())
    assert argv[-1].endswith("clip_x2.mkv")


def test_gguf_runs_llama_bench_with_the_vulkan_device_in_the_environment(home: Path) -> None:
    fake_tool(home / "bin", "llama-bench")
    model = home / "model.gguf"
    model.write_bytes(b"x" * 1000)
    (spec,) = specs_for_files([model])
    assert spec.argv == ("llama-bench", "-m", "{file}")
    assert spec.env == {"GGML_VK_VISIBLE_DEVICES": "{vk_index}"}
    assert spec.vram_bytes == 1150  # estimated from the model's size


def test_unknown_file_types_and_recipes_are_refused_with_the_choices(home: Path) -> None:
    text = home / "notes.txt"
    text.write_text("x")
    with pytest.raises(RecipeError, match=r"notes.txt: no recipe handles this kind of file.*upscale-image"):
        specs_for_files([text])
    with pytest.raises(RecipeError, match="no recipe named 'nope'; known recipes: torch"):
        specs_for_files([text], recipe="nope")
    task_file = home / "my job.toml"
    task_file.write_text('kind = "command"\nargv = ["true"]\n')
    with pytest.raises(RecipeError, match=r"queued with `gputray submit --task my job.toml`"):
        specs_for_files([task_file])


def test_all_or_nothing(home: Path) -> None:
    good = home / "a.py"
    good.write_text("")
    with pytest.raises(SubmitError, match=r"missing\.py: no such file"):
        specs_for_files([good, home / "missing.py"])
    folder = home / "photos.png"  # a folder, even one named like an image
    folder.mkdir()
    with pytest.raises(SubmitError, match=r"photos\.png: is a folder; give the files in it"):
        specs_for_files([good, folder])


def test_overrides_change_placement_keys(home: Path) -> None:
    script = home / "a.py"
    script.write_text("")
    (spec,) = specs_for_files(
        [script], overrides=TaskPatch(device_prefs=("780m",), on_busy="cpu", vram_bytes=3 * 1024**3)
    )
    assert spec.device_prefs == ("780m",) and spec.on_busy == "cpu" and spec.vram_bytes == 3 * 1024**3


def test_a_user_recipe_replaces_a_shipped_one(home: Path) -> None:
    config = home / "home" / "config"
    config.mkdir(parents=True)
    (config / "recipes.toml").write_text(
        '[[recipe]]\nname = "upscale-image"\npatterns = ["*.png"]\nkind = "command"\n'
        'argv = ["myscaler", "{file}"]\n',
        encoding="utf-8",
    )
    fake_tool(home / "bin", "myscaler")
    image = home / "x.png"
    image.write_bytes(b"")
    (spec,) = specs_for_files([image])
    assert spec.argv == ("myscaler", "{file}")


def test_a_broken_user_recipe_names_its_file(home: Path) -> None:
    config = home / "home" / "config"
    config.mkdir(parents=True)
    (config / "recipes.toml").write_text('[[recipe]]\nname = "x"\nargv = ["a", "{nope}"]\n', encoding="utf-8")
    with pytest.raises(RecipeError, match=r"recipes.toml: recipe 'x': key 'argv': unknown placeholder"):
        load_recipes()


def test_a_program_given_as_a_path_is_looked_up_relative_to_the_working_folder(home: Path) -> None:
    from gputray.scheduler.tasks.recipes import check_runnable
    from gputray.scheduler.tasks.records import TaskSpec

    tool = fake_tool(home / "tools", "conv")
    check_runnable(TaskSpec(kind="command", name="c", argv=("./conv",), cwd=str(tool.parent)))
    check_runnable(TaskSpec(kind="command", name="c", argv=(str(tool),)))
    with pytest.raises(ToolNotFound, match=r"'\./conv' is not installed"):
        check_runnable(TaskSpec(kind="command", name="c", argv=("./conv",), cwd=str(home)))


def test_every_problem_is_reported_at_once_and_nothing_is_returned(home: Path) -> None:
    from gputray.scheduler.tasks.recipes import SubmitProblems

    good = home / "a.py"
    good.write_text("")
    (home / "photos").mkdir()
    for name in ("cat.png", "dog.png", "notes.txt"):
        (home / name).write_text("x")
    files = [
        good,
        home / "missing.mp4",
        home / "photos",
        home / "cat.png",
        home / "notes.txt",
        home / "dog.png",
    ]
    with pytest.raises(SubmitProblems) as info:
        specs_for_files(files)
    lines = str(info.value).splitlines()
    assert "5 of 6 files cannot be queued, so none was queued" in lines[0]
    assert "fix these and submit the files again" in lines[0]
    body = [line.strip() for line in lines[1:]]
    no_tool = "needs the program 'realesrgan-ncnn-vulkan', which is not installed or not on PATH"
    assert body[:5] == [
        f"{home / 'missing.mp4'}: no such file",
        f"{home / 'photos'}: is a folder; give the files in it (one job per file)",
        f"{home / 'cat.png'}: {no_tool}",
        f"{home / 'notes.txt'}: no recipe handles this kind of file",
        f"{home / 'dog.png'}: {no_tool}",
    ]
    # What would help comes once, not once per file.
    hints = body[5:]
    assert len(hints) == 2
    assert hints[0].startswith("Get realesrgan-ncnn-vulkan: ") and "Real-ESRGAN" in hints[0]
    assert hints[1].startswith("Recipes: ") and "upscale-image" in hints[1]
    # A single file keeps its own error (the tray and the tests match on its type).
    with pytest.raises(ToolNotFound):
        specs_for_files([home / "cat.png"])
    # An unknown --recipe is said once, whatever the number of files.
    with pytest.raises(RecipeError, match=r"^no recipe named 'nope'"):
        specs_for_files(files, recipe="nope")


JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")
BROKEN_RECIPES = [  # a user's recipes.toml as it may be broken, and what the command line says of it
    (b'[[recipe]\nname = "x"\n', "not valid TOML: ", "TOML として読めません: "),
    (
        b'[[recipe]]\nname = "\xff"\n',
        "not valid TOML: the file is not UTF-8 text",
        "UTF-8 のテキストではありません",
    ),
    (b"recipe = 3\n", "key 'recipe': must be an array of tables ([[recipe]])", "テーブルの配列 [[recipe]]"),
    (b"recipe = [1]\n", "recipe #1: must be a table", "1 番目のレシピ: テーブルにしてください"),
    (
        b'[[recipe]]\npatterns = ["*.x"]\n',
        "recipe #1: key 'name': missing or not a string",
        "キー 'name' がないか",
    ),
    (
        b'[[recipe]]\nname = "x"\npatterns = "*.x"\n',
        "recipe 'x': key 'patterns': must be a list of",
        "のような文字列のリスト",
    ),
    (
        b'[[recipe]]\nname = "x"\nvram_per_file_byte = "2"\n',
        "key 'vram_per_file_byte': must be a number",
        "数値にしてください",
    ),
    (
        b'[[recipe]]\nname = "x"\nargv = ["t"]\npattern = ["*.x"]\n',
        "key 'pattern': unknown key (did you mean 'patterns'?)",
        "'patterns' のことですか",
    ),
    (  # task keys that make no task: the task check's problem, a code of its own (RecipeBadTask.problem)
        b'[[recipe]]\nname = "x"\npatterns = ["*.x"]\nkind = "vulkan"\nargv = ["t", "{file}", "{outt}"]\n',
        "recipe 'x': key 'argv': unknown placeholder {outt} in '{outt}'; known: {file} {stem} {out}",
        "レシピ「x」: キー 'argv': 「{outt}」の中に不明なプレースホルダー {outt}。使えるもの: {file}",
    ),
]


@pytest.mark.parametrize(("text", "english", "japanese"), BROKEN_RECIPES, ids=lambda v: str(v)[:24])
def test_a_broken_recipes_file_says_what_is_wrong_in_english_and_in_japanese(
    home: Path, text: bytes, english: str, japanese: str
) -> None:
    """#31: a malformed recipes file was reported in English only. Its problem is a code (the file, the
    recipe, the key): the command line's English as it was, the tray's Japanese from the same code."""
    from gputray.scheduler.reasons.render import render
    from gputray.scheduler.reasons.submit_codes import RecipesNotToml

    config = home / "home" / "config"
    config.mkdir(parents=True)
    recipes = config / "recipes.toml"
    recipes.write_bytes(text)
    with pytest.raises(RecipeError) as caught:
        load_recipes()
    said = caught.value.said
    assert said is not None and render(said) == str(caught.value)
    assert str(caught.value).startswith(f"{recipes}: ") and english in str(caught.value)
    ja = render(said, "ja")
    assert ja.startswith(f"{recipes}: ") and japanese in ja and JAPANESE.search(ja), ja
    if not isinstance(said, RecipesNotToml):  # (the TOML parser's own words stay as written)
        assert not re.search(r"\b(key|must|missing|recipe #|unknown|valid)\b", ja), ja


def test_a_recipes_file_that_cannot_be_read_says_so_with_the_systems_words(home: Path) -> None:
    from gputray.scheduler.reasons.render import render

    recipes = home / "home" / "config" / "recipes.toml"
    recipes.mkdir(parents=True)  # a folder where the file should be
    with pytest.raises(RecipeError) as caught:
        load_recipes()
    assert str(caught.value) == f"{recipes}: cannot read: Is a directory"
    assert render(caught.value.said, "ja") == f"{recipes}: 読み込めません: Is a directory"
