"""Build /sys and /proc trees for the amdgpu backend tests from the real captured snapshots."""

from __future__ import annotations

import os
import shutil
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "amdgpu-sysfs"
PHOENIX = FIXTURES / "phoenix"
STRIX = FIXTURES / "strixpoint"
RX6900XT = FIXTURES / "rx6900xt"
# Folders the backend never reads; leaving them out of copies keeps the tests quick.
_UNREAD = shutil.ignore_patterns("ip_discovery", "fw_version", "caches", "msi_irqs")


def link_snapshot(sys_dir: Path, snapshot: Path) -> Path:
    """A /sys tree whose class/drm (and class/kfd/kfd) are symlinks to the untouched snapshot."""
    (sys_dir / "class").mkdir(parents=True, exist_ok=True)
    (sys_dir / "class" / "drm").symlink_to(snapshot.resolve(), target_is_directory=True)
    if (snapshot / "kfd").is_dir():
        (sys_dir / "class" / "kfd").mkdir()
        (sys_dir / "class" / "kfd" / "kfd").symlink_to((snapshot / "kfd").resolve(), target_is_directory=True)
    return sys_dir


def _make_writable(root: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | stat.S_IWUSR)
    root.chmod(root.stat().st_mode | stat.S_IWUSR)


def copy_card(sys_dir: Path, snapshot: Path, card: str, as_card: str | None = None) -> Path:
    """Copy one card of a snapshot into ``sys_dir/class/drm`` (writable); returns its device folder."""
    drm = sys_dir / "class" / "drm"
    drm.mkdir(parents=True, exist_ok=True)
    target = drm / (as_card or card)
    shutil.copytree(snapshot.resolve() / card, target, ignore=_UNREAD)
    _make_writable(target)
    if (snapshot / "kfd").is_dir() and not (sys_dir / "class" / "kfd" / "kfd").exists():
        kfd = sys_dir / "class" / "kfd" / "kfd"
        shutil.copytree(snapshot.resolve() / "kfd", kfd, ignore=_UNREAD)
        _make_writable(kfd)
    return target / "device"


def write(path: Path, text: str | bytes) -> None:
    if path.is_symlink() or path.exists():
        path.unlink()
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)


def make_unreadable(path: Path) -> None:
    """Tests run as root, where chmod 000 does not stop reads: a folder in place of the file does."""
    if path.exists() or path.is_symlink():
        path.unlink()
    path.mkdir()


def add_process(
    proc_dir: Path,
    pid: int,
    comm: str,
    fds: dict[int, str],
    fdinfo: dict[int, str] | None = None,
) -> Path:
    """``proc_dir/PID`` with ``comm``, ``fd/N`` symlinks to ``fds[N]`` and ``fdinfo/N`` texts."""
    base = proc_dir / str(pid)
    (base / "fd").mkdir(parents=True, exist_ok=True)
    (base / "fdinfo").mkdir(exist_ok=True)
    (base / "comm").write_text(comm + "\n")
    for fd, target in fds.items():
        link = base / "fd" / str(fd)
        if link.is_symlink():
            link.unlink()
        link.symlink_to(target)
        if fdinfo is None or fd not in fdinfo:
            (base / "fdinfo" / str(fd)).write_text(f"pos:\t0\nflags:\t02\nmnt_id:\t24\nino:\t{fd}\n")
    for fd, text in (fdinfo or {}).items():
        (base / "fdinfo" / str(fd)).write_text(text)
    return base


def amdgpu_fdinfo(
    client_id: int,
    pdev: str = "0000:64:00.0",
    *,
    gfx_ns: int = 0,
    compute_ns: int = 0,
    vram_kib: int = 0,
    gtt_kib: int = 0,
) -> str:
    """An fdinfo text in the shape amdgpu prints it (kernel 6.8, legacy memory keys)."""
    return (
        f"pos:\t0\nflags:\t02100002\nmnt_id:\t24\nino:\t1144\n"
        f"drm-driver:\tamdgpu\ndrm-client-id:\t{client_id}\ndrm-pdev:\t{pdev}\npasid:\t32786\n"
        f"drm-memory-vram:\t{vram_kib} KiB\ndrm-memory-gtt: \t{gtt_kib} KiB\ndrm-memory-cpu: \t0 KiB\n"
        f"amd-memory-visible-vram:\t{vram_kib} KiB\namd-evicted-vram:\t0 KiB\n"
        f"drm-engine-gfx:\t{gfx_ns} ns\ndrm-engine-compute:\t{compute_ns} ns\ndrm-engine-dma:\t0 ns\n"
    )


class _OpenRecorder:
    """Records every path Python opens or lists (audit events) while active."""

    def __init__(self) -> None:
        self.active = False
        self.paths: list[str] = []
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple[object, ...]) -> None:
        if self.active and event in ("open", "os.listdir", "os.scandir") and args:
            path = args[0]
            if isinstance(path, (str, bytes, os.PathLike)):
                self.paths.append(os.fsdecode(path))


_RECORDER: _OpenRecorder | None = None


@contextmanager
def record_opens() -> Iterator[list[str]]:
    """Every file opened and folder listed by this process inside the ``with`` block."""
    global _RECORDER
    if _RECORDER is None:
        _RECORDER = _OpenRecorder()
    _RECORDER.paths = []
    _RECORDER.active = True
    try:
        yield _RECORDER.paths
    finally:
        _RECORDER.active = False
