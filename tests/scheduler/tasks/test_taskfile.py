from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gputray.scheduler.tasks.records import TaskPatch, TaskSpec
from gputray.scheduler.tasks.taskfile import (
    TASK_KEYS,
    TaskFileError,
    load_task_file,
    parse_duration,
    parse_size,
    patch_from_table,
    spec_from_patch,
    spec_from_table,
)

GIB = 1024**3


def write(tmp_path: Path, text: str, name: str = "job.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_full_task_file(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
name = "train"
kind = "torch"
script = "train.py"
args = ["--epochs", "3"]
files = ["data/a b.png"]
devices = ["5060ti", "780m", "cpu"]
on_busy = "redirect"
max_wait = "10m"
after_max_wait = "cpu"
vram = "4GiB"
priority = 5
needs = ["fp16"]
start_at = 2026-12-01T01:00:00
window = "01:00-07:00"
timeout = "1h30m"
retries = 2
backoff = "45s"
cwd = "work"

[env]
HSA_OVERRIDE_GFX_VERSION = "11.0.0"
""",
    )
    spec = load_task_file(path)
    assert spec.kind == "torch" and spec.name == "train"
    assert spec.script == str(tmp_path / "train.py")  # relative to the task file
    assert spec.files == (str(tmp_path / "data" / "a b.png"),)
    assert spec.cwd == str(tmp_path / "work")
    assert spec.args == ("--epochs", "3")
    assert spec.device_prefs == ("5060ti", "780m", "cpu")
    assert spec.on_busy == "redirect" and spec.after_max_wait == "cpu"
    assert spec.max_wait_s == 600 and spec.timeout_s == 5400 and spec.backoff_s == 45
    assert spec.vram_bytes == 4 * GIB
    assert spec.priority == 5 and spec.retries == 2 and spec.needs == ("fp16",)
    assert spec.start_at == dt.datetime(2026, 12, 1, 1, 0).timestamp()
    assert spec.window == "01:00-07:00"
    assert spec.env == {"HSA_OVERRIDE_GFX_VERSION": "11.0.0"}


def test_the_commented_example_in_the_module_docstring_loads(tmp_path: Path) -> None:
    """The README sends people to this example; copying it as written must give a valid task."""
    import textwrap

    from gputray.scheduler.tasks import taskfile

    doc = taskfile.__doc__ or ""
    example = textwrap.dedent(doc.split("::\n", 1)[1].split("\n\n", 1)[0])
    spec = load_task_file(write(tmp_path, example, "example.toml"))
    assert spec.name == "train" and spec.kind == "torch"
    assert spec.env == {"GGML_VK_VISIBLE_DEVICES": "{vk_index}"}
    assert spec.vram_bytes == 4 * GIB and spec.after_max_wait == "cpu"
    assert (spec.prefer, spec.max_slowdown, spec.family) == ("fastest", 1.5, "resnet-infer")


def test_task_table_form_and_defaults(tmp_path: Path) -> None:
    path = write(tmp_path, '[task]\nargv = ["ffmpeg", "-i", "{file}", "{out}"]\nfiles = ["v.mp4"]\n')
    spec = load_task_file(path)
    assert spec.kind == "command"
    assert spec.name == "ffmpeg v.mp4"
    assert spec.on_busy == "wait" and spec.retries == 0 and spec.device_prefs == ()


@pytest.mark.parametrize(
    ("text", "key", "problem"),
    [
        ('argv = ["x"]\nmax_wait = "ten minutes"', "max_wait", "duration"),
        ('argv = ["x"]\nvram = "lots"', "vram", "size"),
        ('argv = ["x"]\nvram_byts = 3', "vram_byts", "did you mean 'vram_bytes'"),
        ('command = ["echo", "hi"]', "command", "did you mean 'argv'"),
        ('argv = ["x"]\nzzz = 1', "zzz", "the keys are: after, after_any, after_max_wait, allow_unproven,"),
        ('kind = "cuda"\nargv = ["x"]', "kind", "torch, vulkan, command"),
        ('kind = "torch"', "script", "missing"),
        ('argv = "echo hi"', "argv", "list of strings"),
        ("argv = []", "argv", "missing"),
        ('argv = ["x"]\non_busy = "later"', "on_busy", "wait, redirect, cpu"),
        ('argv = ["x"]\nwindow = "night"', "window", "01:00-07:00"),
        ('kind = "vulkan"\nargv = ["x", "{fil}"]', "argv", "unknown placeholder {fil}"),
        ('argv = ["x", "{fil}"]\nplaceholders = true', "argv", "unknown placeholder {fil}"),
        ('argv = ["x"]\nplaceholders = "yes"', "placeholders", "true or false"),
        ('argv = ["x"]\nretries = -1', "retries", "at least 0"),
        ('argv = ["x"]\nretries = 1.5', "retries", "whole number"),
        ('argv = ["x"]\nretries = 100000', "retries", "at most 100"),
        ('kind = "vulkan"\nargv = ["up", "-i", "{file}"]', "files", "uses {file} but no input file"),
        ('argv = ["x"]\nneeds = ["fp17"]', "needs", "unknown 'fp17'; known: "),
        ('kind = "vulkan"\nargv = ["x"]\nenv = true', "env", "must be a table"),
        ('argv = ["x"]\ntimeout = "0s"', "timeout", "more than 0"),
        ('argv = ["x"]\npriority = 99999999999999999999', "priority", "at most 1000000"),
        ('argv = ["x"]\npriority = true', "priority", "whole number"),
        ('argv = ["x"]\nenv = { "1BAD" = "v" }', "env", "not a valid environment variable name"),
        ('argv = ["x"]\nstart_at = "tomorrow"', "start_at", "date and time"),
        ('script = "a.py"\nargv = ["x"]', "argv", "not used by torch"),
        ('argv = ["x"]\nprefer = "quickest"', "prefer", "must be one of free, fastest, greenest"),
        ('argv = ["x"]\nmax_slowdown = 0.5', "max_slowdown", "from 1 to 100"),
        ('argv = ["x"]\nfamily = ""', "family", ""),
    ],
)
def test_errors_name_the_file_the_key_and_the_problem(
    tmp_path: Path, text: str, key: str, problem: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(TaskFileError) as info:
        load_task_file(path)
    message = str(info.value)
    assert message.startswith(str(path))
    assert f"'{key}'" in message
    assert problem in message


def test_unreadable_files_are_clear(tmp_path: Path) -> None:
    with pytest.raises(TaskFileError, match="no such task file"):
        load_task_file(tmp_path / "missing.toml")
    bad = write(tmp_path, 'argv = ["x"\n')
    with pytest.raises(TaskFileError, match="not valid TOML"):
        load_task_file(bad)
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(TaskFileError, match=str(binary.name)):
        load_task_file(binary)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90", 90),
        (90, 90),
        ("90s", 90),
        ("10m", 600),
        ("1h30m", 5400),
        ("2d", 172800),
        ("1.5h", 5400),
        ("250ms", 0.25),
        ("10 min", 600),
    ],
)
def test_durations(text: Any, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "m", "10x", "-5", "1h-3m", True, [1]])
def test_bad_durations(text: Any) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("4GiB", 4 * GIB),
        ("4 GiB", 4 * GIB),
        ("4G", 4 * GIB),
        ("4GB", 4_000_000_000),
        ("512MiB", 512 * 1024**2),
        ("1.5GiB", int(1.5 * GIB)),
        (1024, 1024),
        ("100", 100),
        ("2kib", 2048),
    ],
)
def test_sizes(text: Any, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["lots", "4 GiBs", "-1", "4iB", "", False])
def test_bad_sizes(text: Any) -> None:
    with pytest.raises(ValueError):
        parse_size(text)


def test_a_patch_in_either_spelling_replaces_the_field_and_adds_to_env() -> None:
    spec = spec_from_table({"argv": ["x"], "vram": "1GiB", "env": {"A": "1"}}, source="t")
    patch = patch_from_table({"vram_bytes": "2GiB", "devices": ["cpu"], "env": {"B": 2}}, source="t")
    again = spec_from_patch(patch, base=spec, source="t")
    assert again.vram_bytes == 2 * GIB and again.device_prefs == ("cpu",)
    assert again.env == {"A": "1", "B": "2"}
    assert again.name == spec.name and again.argv == ("x",)


def test_a_patch_clears_a_field_with_none_and_leaves_what_it_does_not_set() -> None:
    spec = spec_from_table({"argv": ["x"], "window": "01:00-02:00", "priority": 3}, source="t")
    again = spec_from_patch(TaskPatch(window=None), base=spec, source="t")
    assert again.window is None and again.priority == 3


def test_both_spellings_of_one_key_are_refused_naming_the_second() -> None:
    with pytest.raises(TaskFileError, match="key 'vram_bytes': given twice"):
        patch_from_table({"argv": ["x"], "vram": "1GiB", "vram_bytes": 5}, source="t")


_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.lists(st.one_of(st.text(max_size=8), st.integers()), max_size=3),
    st.dictionaries(
        st.text(max_size=5), st.one_of(st.text(max_size=5), st.integers(), st.booleans()), max_size=2
    ),
)
_keys = st.sampled_from([*sorted(TASK_KEYS), "bogus"])


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(_keys, _values, max_size=8))
def test_any_malformed_mapping_is_a_task_file_error_or_a_valid_spec(data: dict[str, Any]) -> None:
    try:
        spec = spec_from_table(data, source="fuzz.toml")
    except TaskFileError as exc:
        assert str(exc).startswith("fuzz.toml:")
    else:
        assert isinstance(spec, TaskSpec)
        assert spec.kind in {"torch", "vulkan", "command"}
        assert (spec.script is not None) == (spec.kind == "torch")


_toml_bits = st.sampled_from(
    [
        'argv = ["x"]\n',
        'kind = "torch"\n',
        'script = "a.py"\n',
        "[task]\n",
        "[env]\n",
        'vram = "4GiB"\n',
        "retries = -3\n",
        'window = "25:00-01:00"\n',
        "= =\n",
        '"\\u0000"\n',
        "max_wait = 1e400\n",
        "[[task]]\n",
        'devices = ["", "cpu"]\n',
        "priority = 1.5\n",
        "\xff\n",
        "env = 3\n",
        'argv = ["{vk_index}", "{nope}"]\n',
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_toml_bits, max_size=6), st.binary(max_size=20))
def test_any_malformed_file_is_a_task_file_error_naming_the_file(bits: list[str], noise: bytes) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.toml"
        path.write_bytes("".join(bits).encode("utf-8", "surrogateescape") + noise)
        try:
            load_task_file(path)
        except TaskFileError as exc:
            assert str(exc).startswith(str(path))


def test_a_command_argv_is_the_users_program_line_verbatim(tmp_path: Path) -> None:
    """Braces, JSON and f-strings in a command task are not placeholders (only templates have them)."""
    path = write(
        tmp_path,
        'kind = "command"\n'
        """argv = ["python3", "-c", "x = 1; print(f'{x}')", '{"a": {"b": 2}}', "{file}", "{"]\n"""
        'env = { JSON_CONF = "{x}" }\n',
    )
    spec = load_task_file(path)
    assert spec.argv == ("python3", "-c", "x = 1; print(f'{x}')", '{"a": {"b": 2}}', "{file}", "{")
    assert spec.env == {"JSON_CONF": "{x}"}
    assert not spec.fills_placeholders
    opted = load_task_file(
        write(tmp_path, 'argv = ["cat", "{file}"]\nfiles = ["a.txt"]\nplaceholders = true')
    )
    assert opted.fills_placeholders and msgspec.convert(opted.to_dict(), TaskSpec) == opted
