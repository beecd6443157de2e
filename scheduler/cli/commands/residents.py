"""``gputray residents`` (the GPU servers running here: what each holds, since when it is idle) and
``gputray free-resident NAME`` (ask one to let go of its GPU memory, through its own API)."""

from __future__ import annotations

import argparse
import time

from gputray.scheduler import protocol as rq
from gputray.scheduler.cli.commands.client import ask, run_command
from gputray.scheduler.cli.commands.common import EXIT_REFUSED
from gputray.scheduler.console import print_json


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "residents",
        help="the GPU servers running here (Ollama, llama-server, llama-swap, ComfyUI, LM Studio)",
        description=(
            "List the GPU servers gputray recognises running on this machine (and those [[resident]] in "
            "the config adds): the GPU memory each holds, the models it has loaded, and how long it has "
            "been idle. A waiting task that needs memory an idle one holds may have it freed for it "
            "([[resident]] free_when_idle; docs/residents.md)."
        ),
    )
    p.add_argument("--json", action="store_true", help="print a JSON document instead of text")
    p.set_defaults(func=lambda a: run_command(_list, a))
    p = sub.add_parser(
        "free-resident",
        help="ask a resident (an LLM server, ComfyUI) to let go of its GPU memory",
        description=(
            "Ask a resident to let go of its GPU memory through its own API (Ollama keep_alive 0, "
            "ComfyUI /free, llama-swap /unload, llama-server's router /models/unload, lms unload). It "
            "is never killed, and never asked while it serves a request. A task waiting for that memory "
            "starts once the device's used memory has dropped. To keep a task waiting instead, and be "
            'asked no more about that resident for it (the tray\'s "Keep waiting"): '
            "`gputray edit ID --keep-waiting NAME`."
        ),
    )
    p.add_argument(
        "name",
        metavar="NAME",
        help=(
            "the resident's name, as `gputray residents` shows it, or its port (or pid) where several "
            "share a name"
        ),
    )
    p.add_argument("--json", action="store_true", help="print a JSON document instead of text")
    p.set_defaults(func=lambda a: run_command(_free, a))


def _list(args: argparse.Namespace) -> int:
    from gputray.scheduler.resident_words import resident_line

    reply = ask(rq.Status())
    now_s = reply.now_s or time.time()
    if args.json:
        import msgspec

        print_json(msgspec.to_builtins(reply.residents))
        return 0
    names = {r.info.key: r.info.name for r in (reply.snapshot.readings if reply.snapshot else ())}
    for resident in reply.residents:
        print(resident_line(resident, now_s, names.get(resident.device or "")))
    if not reply.residents:
        print("no resident GPU server is running")
    return 0


def _free(args: argparse.Namespace) -> int:
    reply = ask(rq.FreeResident(name=args.name))
    if args.json:
        print_json({"said": reply.said, "asked": reply.asked})
    else:
        print(reply.said)
    return 0 if reply.asked else EXIT_REFUSED
