"""``gputray config``: the config file's path and what is wrong in it (what the owner logs at start)."""

from __future__ import annotations

import argparse

from gputray.scheduler.cli.commands.common import EXIT_REFUSED, error, print_json
from gputray.scheduler.config import ClusterSection, ConfigError, read_config
from gputray.scheduler.paths import app_paths


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "config",
        help="check the config file: bad values, unknown keys",
        description=(
            "Read the config file as gputray does and list each problem: a value of the wrong type or "
            "out of range (its default is used), an unknown key (ignored; the closest known one is "
            "named). Exits 1 when there is one."
        ),
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.set_defaults(func=run_check)


def run_check(args: argparse.Namespace) -> int:
    path = app_paths().config_file
    try:
        config = read_config(path)
    except ConfigError as exc:
        return error(str(exc), EXIT_REFUSED)
    problems = [p.message for p in config.problems]
    cluster = args.cluster_commands  # handed from above (cluster_port): the scheduler never imports it
    no_type_errors = not any(not p.unknown for p in config.problems_in("cluster"))
    if cluster is not None and config.cluster != ClusterSection() and no_type_errors:
        # sizes, durations and the machine name: what the cluster bridge checks when it starts
        problem = cluster.config_problem(config.cluster)
        if problem is not None:
            problems.append(f"{path}: {problem}")
    if args.json:
        print_json({"config_file": str(path), "exists": path.exists(), "problems": problems})
    else:
        print(f"config file: {path}" + ("" if path.exists() else " (absent: the defaults apply)"))
        print("\n".join(problems) if problems else "no problems")
    return EXIT_REFUSED if problems else 0
