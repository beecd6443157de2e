"""Which files travel with a task, where they land on the other machine, and where results come back.

A task's *base* is the folder of its script or first input file (else its working folder). Every
input (the script, ``files``, and arguments that name an existing file) is staged under one folder on
the target machine: inside the base at the same relative path, else under ``_inputs/N/``. The staged
folder is the job's working folder there, so whatever the job writes beside its input (``{out}``, a
result file) is new in that folder, and comes back to the base on the submitting machine, never over
an existing file (``name (2).ext``). Files under a shared folder (``[cluster] shared``) are used in
place and do not travel.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from gputray.cluster.config import ClusterConfig
from gputray.monitor.units import format_bytes
from gputray.scheduler.client.requests import Refusal
from gputray.scheduler.cluster_port.records import TaskSpec

MANIFEST = ".gputray-inputs.json"


class TransferRefused(Refusal, ValueError):
    """The inputs cannot travel (too large, unreadable); the message says why and what to do."""


@dataclass(frozen=True)
class StagedFile:
    source: str  # absolute path on the submitting machine
    rel: str  # POSIX path under the staging folder
    size_bytes: int


@dataclass(frozen=True)
class StagePlan:
    base: str  # where results come back to, on the submitting machine
    files: tuple[StagedFile, ...]
    rewrites: tuple[tuple[str, str], ...]  # (text in the spec, its staged relative path)
    cwd_rel: str  # the job's working folder under the staging folder ("" = the folder itself)
    shared_in_place: bool  # every input under a shared folder: nothing travels, results stay put

    @property
    def total_bytes(self) -> int:
        return sum(f.size_bytes for f in self.files)


def _candidates(spec: TaskSpec) -> Iterable[str]:
    if spec.script:
        yield spec.script
    yield from spec.files
    args = spec.args if spec.kind == "torch" else spec.argv[1:]
    yield from args


def _resolve(text: str, cwd: str | None) -> Path | None:
    if not text or text.startswith("-") or "\x00" in text:
        return None
    p = Path(text).expanduser()
    if not p.is_absolute():
        if not cwd:
            return None
        p = Path(cwd) / p
    try:
        return p if p.is_file() else None
    except OSError:
        return None


def plan_inputs(spec: TaskSpec, config: ClusterConfig) -> StagePlan:
    first = spec.script or (spec.files[0] if spec.files else None)
    base = Path(os.path.abspath(Path(first).parent if first else Path(spec.cwd or os.getcwd())))
    found: list[tuple[str, Path]] = []
    for text in _candidates(spec):
        path = _resolve(text, spec.cwd)
        if path is not None:
            found.append((text, Path(os.path.abspath(path))))
    if found and all(config.is_shared(p) for _, p in found):
        return StagePlan(str(base), (), (), "", True)
    files: dict[str, StagedFile] = {}
    rewrites: list[tuple[str, str]] = []
    outside = 0
    for text, path in found:
        if config.is_shared(path):
            continue
        if str(path) in files:
            rel = files[str(path)].rel
        else:
            try:
                rel = PurePosixPath(*path.relative_to(base).parts).as_posix()
            except ValueError:
                outside += 1
                rel = f"_inputs/{outside}/{path.name}"
            try:
                size = path.stat().st_size
            except OSError as exc:
                raise TransferRefused(f"cannot read {path}: {exc.strerror}") from None
            files[str(path)] = StagedFile(str(path), rel, size)
        rewrites.append((text, rel))
    cwd_rel = ""
    if spec.cwd:
        try:
            cwd_rel = PurePosixPath(*Path(os.path.abspath(spec.cwd)).relative_to(base).parts).as_posix()
        except ValueError:
            cwd_rel = ""
    if cwd_rel == ".":
        cwd_rel = ""
    return StagePlan(str(base), tuple(files.values()), tuple(rewrites), cwd_rel, False)


def check_size(plan: StagePlan, config: ClusterConfig, machine: str) -> None:
    if plan.total_bytes > config.max_transfer_bytes:
        biggest = max(plan.files, key=lambda f: f.size_bytes)
        raise TransferRefused(
            f"the inputs ({format_bytes(plan.total_bytes)}; {Path(biggest.source).name} is "
            f"{format_bytes(biggest.size_bytes)}) are over [cluster] max_transfer "
            f"({format_bytes(config.max_transfer_bytes)}) for sending to {machine}: put them under a "
            "folder every machine shares ([cluster] shared) or raise max_transfer"
        )


def staged_spec(spec: TaskSpec, plan: StagePlan, staging_dir: str) -> TaskSpec:
    """The spec as the target machine runs it: inputs at their staged paths, working folder there."""
    if plan.shared_in_place:
        return spec
    root = Path(staging_dir)
    cwd = root / plan.cwd_rel if plan.cwd_rel else root
    table = dict(plan.rewrites)

    def moved(text: str) -> str:
        rel = table.get(text)
        if rel is None:
            return text
        if Path(text).is_absolute() or (spec.kind == "torch" and text == spec.script):
            return str(root / rel)
        # a relative argument: relative to the job's (staged) working folder, as it was to its own
        return os.path.relpath(root / rel, cwd)

    return spec.replace(
        script=moved(spec.script) if spec.script else None,
        files=tuple(str(root / table[f]) if f in table else f for f in spec.files),
        args=tuple(moved(a) for a in spec.args) if spec.kind == "torch" else spec.args,
        argv=(*spec.argv[:1], *(moved(a) for a in spec.argv[1:])) if spec.kind != "torch" else spec.argv,
        cwd=str(cwd),
    )


# --- on the machine that runs it -------------------------------------------------------------------


def safe_rel(rel: str) -> PurePosixPath:
    """A staged relative path, refused when it would leave the staging folder."""
    p = PurePosixPath(rel)
    if p.is_absolute() or not p.parts or any(part in ("..", "") for part in p.parts) or "\x00" in rel:
        raise TransferRefused(f"bad staged path {rel!r}")
    return p


def write_manifest(staging_dir: Path, rels: Iterable[str]) -> None:
    entries = {}
    for rel in rels:
        st = (staging_dir / safe_rel(rel)).stat()
        entries[rel] = [st.st_size, st.st_mtime_ns]
    (staging_dir / MANIFEST).write_text(json.dumps(entries), encoding="utf-8")


def list_outputs(staging_dir: Path) -> list[tuple[str, int]]:
    """Files in the staging folder that are new or changed since the inputs arrived."""
    try:
        inputs = json.loads((staging_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        inputs = {}
    out = []
    for path in sorted(staging_dir.rglob("*")):
        if not path.is_file() or path.is_symlink() or path.name == MANIFEST:
            continue
        rel = PurePosixPath(*path.relative_to(staging_dir).parts).as_posix()
        st = path.stat()
        if inputs.get(rel) == [st.st_size, st.st_mtime_ns]:
            continue
        out.append((rel, st.st_size))
    return out
