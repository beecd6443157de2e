"""``[[resident]]`` and ``[exclusive]`` read from the config (issue 27): built-in residents take a
policy by name, a user's own needs a process pattern, and each bad value is one line naming the file,
the entry and what is allowed, with the rest still read."""

from __future__ import annotations

from pathlib import Path

from gputray.scheduler.config import read_config


def test_policies_a_users_own_resident_and_exclusive_apps(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        '[[resident]]\nname = "comfyui"\nfree_when_idle = "always"\nidle_after = "5min"\n'
        "reload_after = true\n"
        '[[resident]]\nname = "my-server"\nprocess = "my-server*"\nport = 9000\nfree_path = "/release"\n'
        '[exclusive]\napps = ["cs2", "steam_app_*"]\nsettle = "1min"\n'
    )
    config = read_config(path)
    assert config.problems == ()
    comfy = config.residents.policy("ComfyUI")
    assert comfy is not None and (comfy.free_when_idle, comfy.idle_after_s, comfy.reload_after) == (
        "always",
        300,
        True,
    )
    ollama = config.residents.policy("Ollama")
    assert ollama is not None and (ollama.free_when_idle, ollama.idle_after_s) == ("ask", 600)  # the defaults
    mine = config.residents.policy("my-server")
    assert mine is not None and mine.kind.api == "custom" and mine.kind.port == 9000
    assert mine.kind.free_call is not None and mine.kind.free_call.path == "/release"
    assert config.residents.exclusive.apps == ("cs2", "steam_app_*")
    assert config.residents.exclusive.settle_s == 60


def test_each_bad_value_is_one_line_and_the_rest_is_read(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        '[[resident]]\nname = "Ollama"\nfree_when_idle = "sometimes"\nidle_after = "soon"\n'
        '[[resident]]\nname = "unknown-server"\n'
        '[[resident]]\nname = "ComfyUI"\nfree_when_idle = "never"\nreload_afterr = true\n'
        '[exclusive]\napps = "cs2"\n'
        '[[resident]]\nname = "LM Studio"\nfree_when_idle = "alway"\n'
        '[[resident]]\nname = "a"\nprocess = "a"\nport = 70000\n'
        '[[resident]]\nname = "b"\nprocess = "b"\nfree_path = "release"\n'
        '[[resident]]\nname = "c"\nprocess = "c"\nfree_body = \'{"all": true\'\n'
        '[[resident]]\nname = "私の サーバー \\"x\\""\nprocess = "srv"\nfree_when_idle = "always"\n'
    )
    config = read_config(path)
    lines = [str(p) for p in config.problems]
    assert all("\n" not in line and str(path) in line for line in lines), lines
    assert any(
        'free_when_idle = \'sometimes\' is not "ask", "always" or "never"; using "ask"' in x for x in lines
    )
    assert any("idle_after: expected a duration" in x and 'using "10min"' in x for x in lines), lines
    assert any("(unknown-server): not a built-in resident, so `process`" in x for x in lines), lines
    assert any("unknown key `reload_afterr`" in x for x in lines), lines
    assert any("exclusive.apps must be a list of process names" in x for x in lines), lines
    comfy = config.residents.policy("ComfyUI")
    assert comfy is not None and comfy.free_when_idle == "never"  # its good value is used
    ollama = config.residents.policy("Ollama")
    assert ollama is not None and (ollama.free_when_idle, ollama.idle_after_s) == ("ask", 600)
    assert config.residents.policy("unknown-server") is None
    # each says the value it read and what is allowed; the entry is left out, nothing else is lost
    assert any('\'alway\' is not "ask", "always" or "never" (did you mean "always"?)' in x for x in lines)
    assert any("(a): port = 70000 is not a TCP port (1 to 65535); ignored" in x for x in lines), lines
    assert any(
        "(b): the free call must be GET/POST/PUT/DELETE of a path starting with /, not POST 'release'" in x
        for x in lines
    ), lines
    assert any(
        "(c): free_body is sent as JSON (application/json) but is not JSON: Expecting" in x for x in lines
    )
    assert [config.residents.policy(n) for n in "abc"] == [None, None, None]
    assert len(lines) == 9, lines
    mine = config.residents.policy('私の サーバー "x"')  # spaces, quotes, Japanese: a name like any
    assert mine is not None and mine.free_when_idle == "always" and mine.kind.processes == ("srv",)


def test_a_resident_line_names_it_by_port_or_else_by_pid() -> None:
    """``gputray residents``: one whose port is not known (its API does not answer, another user's
    process) is named by its pid, which ``free-resident`` takes where several share a name."""
    from gputray.monitor.residents import ResidentView
    from gputray.scheduler.resident_words import resident_line

    gib = 1 << 30
    served = ResidentView("Ollama", 41, 11434, "k", 6 * gib, ("qwen3:14b",), False, 0.0, True, True)
    mute = ResidentView("Ollama", 42, None, None, None, (), False, 0.0, False, False)
    assert resident_line(served, 60.0, "GeForce RTX 5060 Ti") == (
        "Ollama holds 6.0 GiB on GeForce RTX 5060 Ti · idle 1 min (qwen3:14b), port 11434"
    )
    assert resident_line(mute, 30.0) == "Ollama holds — · idle < 1 min, pid 42, its API does not answer"
