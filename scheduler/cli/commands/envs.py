"""``gputray envs``: the Python environments jobs can run in — list, add, remove, scan."""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import sys
from pathlib import Path

from gputray.scheduler import protocol as rq
from gputray.scheduler.cli.commands.common import EXIT_REFUSED, EXIT_USAGE, error, print_json, terminal_cells
from gputray.scheduler.config import ConfigError
from gputray.scheduler.paths import app_paths
from gputray.scheduler.pyenvs.doctor import verdict_mark
from gputray.scheduler.pyenvs.doctor_cache import PairResult, cached_results
from gputray.scheduler.pyenvs.registry import (
    EnvError,
    add_env,
    check_python,
    load_envs,
    parse_env_assignments,
    remove_env,
    resolve_python,
    scan_candidates,
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "envs",
        help="list, add, remove or find the Python environments jobs run in",
        description=(
            "Python environments (venvs, conda envs) that jobs run in, kept in the config file as "
            "[[env]] tables. PyTorch CUDA and ROCm builds cannot share one environment, so a job "
            "moved from an NVIDIA GPU to an AMD one starts in another env. Without a subcommand, "
            "list them with what `gputray doctor` last found."
        ),
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.set_defaults(func=run_list)
    envs_sub = parser.add_subparsers(dest="envs_command", metavar="SUBCOMMAND")

    lister = envs_sub.add_parser("list", help="list the environments (the default)")
    _json_flag(lister)
    lister.set_defaults(func=run_list)

    adder = envs_sub.add_parser(
        "add",
        help="add an environment",
        description=(
            "Add a Python interpreter (or a venv folder) as an environment. The interpreter is run "
            "once to check that it is a Python; torch is not imported here. A running gputray then "
            "checks it on each device in the background (the doctor's probe), and a torch job is "
            "never started in an env before that check passed. `gputray doctor` shows the results."
        ),
    )
    adder.add_argument(
        "python", type=Path, metavar="PATH", help="the interpreter, e.g. ~/venvs/rocm/bin/python"
    )
    adder.add_argument("--name", help="a short name (default: from the venv folder)")
    adder.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an environment variable set for this env only, e.g. HSA_OVERRIDE_GFX_VERSION=11.0.0 "
        "(repeatable)",
    )
    _json_flag(adder)
    adder.set_defaults(func=run_add)

    remover = envs_sub.add_parser("remove", help="remove an environment (its files stay)")
    remover.add_argument("name", metavar="NAME")
    _json_flag(remover)
    remover.set_defaults(func=run_remove)

    scanner = envs_sub.add_parser(
        "scan",
        help="suggest environments found on this machine (adds nothing)",
        description=(
            "Look for Python interpreters worth adding: the one running gputray, venvs in ~/.venvs, "
            "~/venvs, ~/.virtualenvs, conda/miniforge envs, ./.venv, and `conda env list` when conda "
            "exists. Prints an `envs add` command for each; nothing is added."
        ),
    )
    _json_flag(scanner)
    scanner.set_defaults(func=run_scan)


def _json_flag(parser: argparse.ArgumentParser) -> None:
    # SUPPRESS: `gputray envs --json` and `gputray envs list --json` both work.
    parser.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")


def _finding(pair: PairResult) -> str:
    text = f"{verdict_mark(pair.verdict)} {pair.device_name}"
    return text if pair.verdict == "works" else f"{text} ({pair.reason})"


def run_list(args: argparse.Namespace) -> int:
    try:
        envs = load_envs()
    except (EnvError, ConfigError) as exc:
        return error(str(exc), EXIT_REFUSED)
    pairs = cached_results(envs)
    if getattr(args, "json", False):
        print_json(
            {
                "config_file": str(app_paths().config_file),
                "envs": [
                    {
                        **env.to_json(),
                        "exists": env.python.exists(),
                        "results": [p.to_json() for p in pairs if p.env_name == env.name],
                    }
                    for env in envs
                ],
            }
        )
        return 0
    if not envs:
        print("No Python environments configured.")
        print("Add one with: gputray envs add PATH   (gputray envs scan suggests some)")
        print(f"config file: {app_paths().config_file}")
        return 0
    rows = [("NAME", "PYTHON", "EXTRA ENV", "LAST DOCTOR")]
    for env in envs:
        mine = [p for p in pairs if p.env_name == env.name]
        if not env.python.exists():
            finding = "❌ interpreter missing"
        elif mine:
            torch_version = next((p.torch_version for p in mine if p.torch_version), None)
            finding = ", ".join(_finding(p) for p in mine)
            finding = f"torch {torch_version}: {finding}" if torch_version else finding
        else:
            finding = "not checked yet (the queue checks it when a job needs it; or run gputray doctor)"
        extra = " ".join(f"{k}={v}" for k, v in env.extra_env.items()) or "—"
        rows.append((env.name, str(env.python), extra, finding))
    widths = [max(terminal_cells(r[i]) for r in rows) for i in range(3)]  # 学習 takes four columns
    for row in rows:
        cells = (cell + " " * (widths[i] - terminal_cells(cell)) for i, cell in enumerate(row[:3]))
        print("  ".join(cells) + "  " + row[3])
    print(f"\nconfig file: {app_paths().config_file}")
    return 0


def run_add(args: argparse.Namespace) -> int:
    try:
        extra = parse_env_assignments(args.env)
    except EnvError as exc:
        return error(str(exc), EXIT_USAGE)  # an option's value the parser could have refused
    try:
        python = resolve_python(args.python)
        facts = check_python(python, extra)
        env = add_env(python, name=args.name, extra_env=extra, check=False)
    except (EnvError, ConfigError) as exc:
        return error(str(exc), EXIT_REFUSED)
    torch_version = facts.get("torch_dist_version")
    checking = _ask_owner_to_check()
    if getattr(args, "json", False):
        print_json(
            {
                **env.to_json(),
                "python_version": facts.get("python_version"),
                "torch": torch_version,
                "checking": checking,
            }
        )
        return 0
    torch_text = f"torch {torch_version}" if torch_version else "no torch installed"
    print(f"added {env.name}: Python {facts.get('python_version')}, {torch_text} — {env.python}")
    if checking:
        print("The running gputray is checking it on each device now; `gputray envs` shows the results.")
    else:
        print(
            "gputray checks it on a device the first time a torch job is to run there "
            "(or run `gputray doctor` now)."
        )
    return 0


def _ask_owner_to_check() -> bool:
    """Ask a running tray or daemon to check the envs in the background; False when none runs."""
    from gputray.scheduler import ipc

    try:
        with ipc.IpcClient(app_paths(), timeout_s=5.0) as client:
            return int(client.ask(rq.CheckEnvs()).checking) > 0
    except ipc.IpcError:
        return False


def run_remove(args: argparse.Namespace) -> int:
    try:
        env = remove_env(args.name)
    except (EnvError, ConfigError) as exc:
        return error(str(exc), EXIT_REFUSED)
    if getattr(args, "json", False):
        print_json({"removed": env.to_json()})
    else:
        print(f"removed {env.name} ({env.python}); its files are untouched")
    return 0


def _quote(path: Path) -> str:
    return shlex.quote(str(path)) if sys.platform != "win32" else f'"{path}"'


def run_scan(args: argparse.Namespace) -> int:
    candidates = scan_candidates()
    if getattr(args, "json", False):
        print_json({"candidates": [{**dataclasses.asdict(c), "python": str(c.python)} for c in candidates]})
        return 0
    new = [c for c in candidates if c.configured_as is None]
    for c in candidates:
        if c.configured_as is not None:
            print(f"  {c.python}  ({c.source}) — already added as {c.configured_as}")
    if not new:
        print("No other Python environments found." if candidates else "No Python environments found.")
        return 0
    print("Found these Python environments (nothing was added); add one with the command shown:")
    for c in new:
        print(f"  {c.python}  ({c.source})")
        print(f"      gputray envs add {_quote(c.python)} --name {shlex.quote(c.suggested_name)}")
    return 0
