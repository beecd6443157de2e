"""`[metrics] listen`: off by default; loopback served as it is; any other address only with a token,
else refused (named by `gputray config`, the endpoint stays off); the token is checked on every request;
the series say what the owner knows (tests/e2e/test_prometheus.py has a real Prometheus read them)."""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

import pytest
from real_owner import home_paths, running_owner
from waiting import wait_for

from gputray.scheduler import protocol as rq
from gputray.scheduler.config import Config, MetricsSection, read_config
from gputray.scheduler.metrics.listen import ListenAddress, ListenError, checked_listen, parse_listen

TOKEN = "a-token-of-24-characters"


@pytest.mark.parametrize(
    ("text", "host", "port", "loopback"),
    [
        ("127.0.0.1:9835", "127.0.0.1", 9835, True),
        ("127.0.0.2:9835", "127.0.0.2", 9835, True),
        ("localhost:9835", "localhost", 9835, True),
        ("[::1]:9835", "::1", 9835, True),
        ("9835", "127.0.0.1", 9835, True),
        ("0.0.0.0:9835", "0.0.0.0", 9835, False),
        ("[::]:9835", "::", 9835, False),
        ("192.168.1.20:9835", "192.168.1.20", 9835, False),
        ("gpu-box.lan:9835", "gpu-box.lan", 9835, False),
    ],
)
def test_listen_addresses_and_which_stay_on_this_machine(
    text: str, host: str, port: int, loopback: bool
) -> None:
    address = parse_listen(text)
    assert address == ListenAddress(host, port)
    assert address.loopback is loopback


@pytest.mark.parametrize(
    "text", ["127.0.0.1", ":9835", "127.0.0.1:99999", "::1:9835", "[::1]9835", "[zz]:1", "a:b"]
)
def test_a_listen_value_that_is_no_address_is_refused_in_words(text: str) -> None:
    with pytest.raises(ListenError, match=r"PORT|port|IPv6"):
        parse_listen(text)


def test_beyond_loopback_needs_a_token_of_16_characters() -> None:
    assert checked_listen("", "") is None
    assert checked_listen("127.0.0.1:9835", "") == ListenAddress("127.0.0.1", 9835)
    with pytest.raises(ListenError, match=r"reachable from other machines.*token"):
        checked_listen("0.0.0.0:9835", "")
    with pytest.raises(ListenError, match="at least 16 characters"):
        checked_listen("0.0.0.0:9835", "short")
    assert checked_listen("0.0.0.0:9835", TOKEN) == ListenAddress("0.0.0.0", 9835)


def test_the_config_check_names_a_refused_address_and_metrics_stay_off(tmp_path: Path) -> None:
    config_file = tmp_path / "config.toml"
    config_file.write_text('[metrics]\nlisten = "0.0.0.0:9835"\n', encoding="utf-8")
    config = read_config(config_file)
    assert config.metrics == MetricsSection()
    (problem,) = config.problems_in("metrics")
    assert (
        "0.0.0.0:9835" in problem.message
        and "token" in problem.message
        and "metrics stay off" in problem.message
    )
    config_file.write_text(f'[metrics]\nlisten = "0.0.0.0:9835"\ntoken = "{TOKEN}"\n', encoding="utf-8")
    assert read_config(config_file).metrics == MetricsSection("0.0.0.0:9835", TOKEN)
    assert read_config(config_file).problems == ()


def get(url: str, token: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_metrics_are_off_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with running_owner(home_paths(tmp_path, monkeypatch), serve_ipc=False, config=Config()) as owner:
        assert owner.metrics is None


def test_a_refused_address_leaves_the_owner_running_without_metrics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = Config(metrics=MetricsSection(listen="0.0.0.0:0"))  # as if read past the config check
    with running_owner(home_paths(tmp_path, monkeypatch), serve_ipc=False, config=config) as owner:
        assert owner.metrics is None
        assert owner.handle(rq.Ping()).ready


def test_the_token_is_asked_on_every_request_and_the_series_follow_the_queue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = Config(metrics=MetricsSection(listen="127.0.0.1:0", token=TOKEN))
    with running_owner(home_paths(tmp_path, monkeypatch), serve_ipc=False, config=config) as owner:
        assert owner.metrics is not None
        url = owner.metrics.server.url
        assert url.startswith("http://127.0.0.1:") and url.endswith("/metrics")
        status, body = get(url)
        assert status == 401 and "token" in body
        assert get(url, "a-wrong-token-of-24-chars")[0] == 401
        assert get(url.removesuffix("metrics"), TOKEN)[0] == 404

        owner.handle(rq.Pause(device="5060"))
        task = owner.handle(rq.Run(argv=["true"], name="waits", overrides={"device_prefs": ["5060"]})).tasks[
            0
        ]

        def waiting_line() -> str | None:
            status, body = get(url, TOKEN)
            assert status == 200
            lines = [line for line in body.splitlines() if line.startswith("gputray_queue_waiting_tasks{")]
            return lines[0] if lines else None

        assert wait_for(waiting_line, 30, "the waiting series") == (
            'gputray_queue_waiting_tasks{device="pci:0000:01:00.0"} 1.0'
        )
        status, body = get(url, TOKEN)
        assert 'gputray_queue_tasks{state="waiting"} 1.0' in body
        assert 'gputray_gpu_info{device="pci:0000:64:00.0",name="Radeon 780M",pci="0000:64:00.0"' in body
        assert "gputray_gpu_utilization_ratio{" in body and "_created" not in body
        owner.handle(rq.Cancel(ids=[task.id]))
        assert wait_for(lambda: waiting_line() is None, 30, "the wait to end")
