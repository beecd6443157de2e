"""``gputray doctor``: which Python env works on which device, proven by a real kernel, with figures."""

from __future__ import annotations

import argparse
import contextlib
import datetime
import sys
from collections.abc import Sequence
from typing import Any

from gputray.monitor.records import DeviceInfo
from gputray.scheduler.cli.commands.common import (
    EXIT_REFUSED,
    error,
    positive_seconds,
    print_json,
    terminal_cells,
)
from gputray.scheduler.config import ConfigError
from gputray.scheduler.pyenvs.doctor import CAPABILITIES, PairResult, run_doctor, verdict_mark
from gputray.scheduler.pyenvs.probe_runner import DEFAULT_TIMEOUT_S
from gputray.scheduler.pyenvs.registry import EnvError, PythonEnv, load_envs
from gputray.scheduler.reasons.doctor_codes import DoctorNews

UNITS = {"bandwidth": "GB/s"}
VERDICT_WORDS = {"works": "works", "limited": "limits", "fails": "fails"}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "doctor",
        help="test which Python env works on which GPU (and the CPU)",
        description=(
            "Probe every configured Python env (see `gputray envs`) in a subprocess: its torch build, "
            "the devices torch sees, a real op on each (torch.cuda.is_available() is not proof), and "
            "a quick bench: fp32 conv2d and matmul, fp16 and bf16 matmul, scaled_dot_product_attention, "
            "memory bandwidth. Prints env × device: ✅ works, ⚠ works with limits, ❌ fails, with the "
            "reason and the fix when known. Results are cached until the interpreter, torch, the "
            "driver or the env's variables change."
        ),
    )
    parser.add_argument("--refresh", action="store_true", help="probe again, ignoring cached results")
    parser.add_argument("--json", action="store_true", help="print a JSON document instead of the table")
    parser.add_argument(
        "--env", action="append", metavar="NAME", help="only this env (repeatable; default: all)"
    )
    parser.add_argument("--no-bench", action="store_true", help="only prove a real op runs; skip the figures")
    parser.add_argument(
        "--demo",
        action="store_true",
        help="also list the demo's simulated RTX 5060 Ti + Radeon 780M (torch jobs placed there run on the "
        "CPU); implied when the running gputray is a demo",
    )
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"stop a probe that takes longer (default {DEFAULT_TIMEOUT_S:g}); a wrong "
        "HSA_OVERRIDE_GFX_VERSION can hang one",
    )
    parser.set_defaults(func=run)


def monitor_devices() -> list[DeviceInfo]:
    """The GPUs the monitor sees (so that GPUs torch misses show up as failures); [] if it cannot say."""
    try:
        from gputray.monitor.factory import build_monitor

        monitor = build_monitor()
    except Exception:
        return []
    try:
        snapshot = monitor.sample_once()
        return [r.info for r in snapshot.readings if r.info.kind != "cpu" and not r.info.simulated]
    except Exception:
        return []
    finally:
        with contextlib.suppress(Exception):
            monitor.stop()


def _pad(text: str, width: int, right: bool = False) -> str:
    gap = " " * max(0, width - terminal_cells(text))
    return gap + text if right else text + gap


def _cell(pair: PairResult, name: str) -> str:
    cap = pair.capability(name)
    if cap is None:
        return "—"
    if not cap.ok:
        return "fails"
    return f"{cap.value:,.1f}" if cap.value is not None else "ok"


def render_table(pairs: Sequence[PairResult]) -> str:
    cap_titles = [title for _, title in CAPABILITIES]
    header = ["ENV", "DEVICE", "RESULT", "SELECTED BY", *cap_titles]
    units = ["", "", "", "", *(UNITS.get(name, "GFLOP/s") for name, _ in CAPABILITIES)]
    rows = [
        [
            p.env_name,
            p.device_name,
            f"{verdict_mark(p.verdict)} {VERDICT_WORDS[p.verdict]}",
            p.selected_by(),
            *(_cell(p, name) for name, _ in CAPABILITIES),
        ]
        for p in pairs
    ]
    widths = [max(terminal_cells(r[i]) for r in [header, units, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        parts = [_pad(c, widths[i], right=i >= 4) for i, c in enumerate(cells)]
        return "  ".join(parts).rstrip()

    out = [line(header), line(units)]
    for pair, row in zip(pairs, rows, strict=True):
        out.append(line(row))
        if pair.verdict != "works":
            out.append(f"    ↳ {pair.reason}")
            if pair.fix:
                out.append(f"      fix: {pair.fix}")
        elif pair.unproven:
            out.append(f"    ↳ selection not proven: {pair.selection_reason}")
            out.append("      only tasks with allow_unproven = true run here")
    return "\n".join(out)


def render_envs(envs: Sequence[PythonEnv], pairs: Sequence[PairResult]) -> str:
    lines = []
    width = max((terminal_cells(e.name) for e in envs), default=0)
    for env in envs:
        mine = [p for p in pairs if p.env_name == env.name]
        first = next((p for p in mine if p.torch_version), None)
        if first is None:
            build = "no torch" if mine else "not probed"
        elif first.cuda_version:
            build = f"torch {first.torch_version} (CUDA {first.cuda_version})"
        elif first.hip_version:
            build = f"torch {first.torch_version} (ROCm/HIP {first.hip_version})"
        else:
            build = f"torch {first.torch_version} (CPU-only build)"
        extra = " ".join(f"{k}={v}" for k, v in env.extra_env.items())
        lines.append(f"{_pad(env.name, width)}  {build}  {env.python}" + (f"  [{extra}]" if extra else ""))
    return "\n".join(lines)


def simulated_rows(pairs: Sequence[PairResult]) -> list[dict[str, Any]]:
    """The demo's GPUs: simulated, so a torch job placed there runs on the CPU, in the first env that
    works on the CPU (None: no env with torch yet)."""
    from gputray.monitor.backends.simulated import RADEON_780M, RTX_5060_TI

    on_cpu = next((p.env_name for p in pairs if p.device_key == "cpu" and p.works), None)
    return [
        {"key": d.key, "name": d.name, "simulated": True, "runs_on": "cpu", "env": on_cpu}
        for d in (RTX_5060_TI, RADEON_780M)
    ]


def render_simulated(rows: Sequence[dict[str, Any]]) -> str:
    from gputray.scheduler.pyenvs.choice import ADD_ENV_HINT

    lines = ["Simulated GPUs (demo; they cannot run kernels):"]
    for row in rows:
        where = f"in {row['env']}" if row["env"] else f"once an env with torch is added: {ADD_ENV_HINT}"
        lines.append(f"  {row['name']}: simulated — torch jobs placed here run on the CPU {where}")
    return "\n".join(lines)


def _when(pairs: Sequence[PairResult]) -> str | None:
    cached = [p.probed_at_s for p in pairs if p.from_cache and p.probed_at_s]
    if not cached:
        return None
    stamp = datetime.datetime.fromtimestamp(min(cached)).strftime("%Y-%m-%d %H:%M")
    return f"Some results are cached (probed {stamp}); `gputray doctor --refresh` probes again."


def doc_json(envs: Sequence[PythonEnv], devices: Sequence[DeviceInfo], pairs: Sequence[PairResult]) -> Any:
    return {
        "envs": [e.to_json() for e in envs],
        "devices": [
            {"key": "cpu", "name": "CPU", "vendor": "cpu", "kind": "cpu"},
            *({"key": d.key, "name": d.name, "vendor": d.vendor, "kind": d.kind} for d in devices),
        ],
        "pairs": [p.to_json() for p in pairs],
    }


def run(args: argparse.Namespace) -> int:
    try:
        envs = load_envs()
    except (EnvError, ConfigError) as exc:
        return error(str(exc), EXIT_REFUSED)
    if args.env:
        unknown = [n for n in args.env if n not in {e.name for e in envs}]
        if unknown:
            known = ", ".join(e.name for e in envs) or "none configured"
            return error(
                f"no environment named {', '.join(map(repr, unknown))} (known: {known})", EXIT_REFUSED
            )
        envs = [e for e in envs if e.name in args.env]
    if not envs:
        print(
            "No Python environments configured. Add one with `gputray envs add PATH` "
            "(`gputray envs scan` suggests some), then run `gputray doctor` again.",
            file=sys.stderr,
        )
        if args.json:  # scripts still get a document to parse
            print_json(doc_json([], monitor_devices(), []))
        return 1
    devices = monitor_devices()

    def progress(news: DoctorNews) -> None:
        from gputray.scheduler.reasons.render import render

        print(f"doctor: {render(news)}", file=sys.stderr, flush=True)

    pairs = run_doctor(
        envs,
        devices,
        refresh=args.refresh,
        bench=not args.no_bench,
        timeout_s=args.timeout,
        progress=progress,
    )
    from gputray.scheduler.cli.commands.devices import owner_is_demo

    simulated = simulated_rows(pairs) if args.demo or owner_is_demo() else []
    if args.json:
        print_json({**doc_json(envs, devices, pairs), "simulated": simulated})
        return 0
    print(render_envs(envs, pairs))
    print()
    print(render_table(pairs))
    if simulated:
        print()
        print(render_simulated(simulated))
    note = _when(pairs)
    if note:
        print()
        print(note)
    return 0
