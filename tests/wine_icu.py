"""Windows' ``icuuc.dll`` for a Wine prefix, from ICU's own Windows build: what lets Qt 6 load under Wine.

``Qt6Core.dll`` (PySide6-Essentials win_amd64, 6.11) imports 20 ``ucnv_*`` converter functions from
``icuuc.dll``, the ICU that Windows 10 1903+ carries in System32. Microsoft builds it with ICU's renaming
off, so it exports plain names (``ucnv_open``). Wine 8 has no ``icuuc.dll``; ICU's own builds version
every C export (``ucnv_open_78``), so a copy of one under the plain name does not satisfy Qt.

What does: ICU's own DLLs (here those in icu4py's win_amd64 wheel, ICU 78, under the Unicode License v3,
which allows copying them) plus an ``icuuc.dll`` that holds no code at all, only an export table in which
every plain name is a *forwarder* (``ucnv_open`` → ``icuuc78-<hash>.ucnv_open_78``). Windows' loader,
and Wine's, follow a forwarder by loading the named DLL from the usual places (System32 here) and taking
its export. This module writes that PE32+ image byte by byte ([PE/COFF] export directory), so no Windows
compiler is needed. Run as a script it does the same for any Wine prefix::

    python tests/wine_icu.py FOLDER_WITH_ICU_DLLS ~/.wine/drive_c/windows/system32
"""

from __future__ import annotations

import re
import shutil
import struct
import sys
from pathlib import Path

IMAGE_BASE = 0x180000000
SECTION_RVA = 0x1000
FILE_ALIGN = 0x200
SECTION_ALIGN = 0x1000
MACHINE_AMD64 = 0x8664
DLL_CHARACTERISTICS = 0x2022  # executable image, large-address aware, a DLL
SECTION_FLAGS = 0x40000040  # initialised data, readable
VERSIONED_UC = re.compile(r"icuuc(\d+)(-[0-9a-f]+)?\.dll", re.IGNORECASE)


class PeImage:
    """The export and import names of a PE image (read from its bytes; enough for DLLs and .pyd files)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        pe = struct.unpack_from("<I", data, 0x3C)[0]
        if data[pe : pe + 4] != b"PE\0\0":
            raise ValueError("not a PE image")
        (count,) = struct.unpack_from("<H", data, pe + 6)
        (optional,) = struct.unpack_from("<H", data, pe + 20)
        (magic,) = struct.unpack_from("<H", data, pe + 24)
        directories = pe + 24 + (112 if magic == 0x20B else 96)
        self._sections: list[tuple[int, int, int, int]] = [
            struct.unpack_from("<IIII", data, pe + 24 + optional + 40 * i + 8) for i in range(count)
        ]  # (virtual size, virtual address, raw size, raw offset)
        self._export_rva = self._u32(directories)
        self._import_rva = self._u32(directories + 8)
        self._wide = magic == 0x20B

    def _u32(self, offset: int) -> int:
        return int(struct.unpack_from("<I", self.data, offset)[0])

    def _at(self, rva: int) -> int:
        for size, va, raw_size, raw in self._sections:
            if va <= rva < va + max(size, raw_size):
                return rva - va + raw
        raise ValueError(f"RVA {rva:#x} lies in no section")

    def _text(self, offset: int) -> str:
        return self.data[offset : self.data.index(b"\0", offset)].decode("ascii")

    def exports(self) -> list[str]:
        if not self._export_rva:
            return []
        directory = self._at(self._export_rva)
        count, names = self._u32(directory + 24), self._at(self._u32(directory + 32))
        return [self._text(self._at(self._u32(names + 4 * i))) for i in range(count)]

    def imports(self) -> dict[str, list[str]]:
        """DLL name → the function names (or ``#ordinal``) imported from it."""
        found: dict[str, list[str]] = {}
        if not self._import_rva:
            return found
        entry = self._at(self._import_rva)
        width, by_ordinal = (8, 1 << 63) if self._wide else (4, 1 << 31)
        while name_rva := self._u32(entry + 12):
            thunks: list[str] = []
            slot = self._at(self._u32(entry) or self._u32(entry + 16))  # lookup table, else the IAT
            while value := int(struct.unpack_from("<Q" if self._wide else "<I", self.data, slot)[0]):
                if value & by_ordinal:
                    thunks.append(f"#{value & 0xFFFF}")
                else:
                    thunks.append(self._text(self._at(value & 0x7FFFFFFF) + 2))  # past the 2-byte hint
                slot += width
            found[self._text(self._at(name_rva))] = thunks
            entry += 20
        return found


def _align(n: int, to: int) -> int:
    return (n + to - 1) // to * to


def forwarder_dll(dll_name: str, forwards: dict[str, str]) -> bytes:
    """A PE32+ DLL with no code whose every export forwards: ``{name: "targetdll.function"}``."""
    names = sorted(forwards, key=str.encode)  # the loader binary-searches the name table
    n = len(names)
    functions = SECTION_RVA + 40  # after the 40-byte export directory
    name_pointers = functions + 4 * n
    ordinals = name_pointers + 4 * n
    strings = bytearray()

    def string(text: str) -> int:
        rva = ordinals + 2 * n + len(strings)
        strings.extend(text.encode("ascii") + b"\0")
        return rva

    own_name = string(dll_name)
    name_rvas = [string(name) for name in names]
    target_rvas = [string(forwards[name]) for name in names]  # inside the export data: forwarders
    body = struct.pack("<IIHHIIIIIII", 0, 0, 0, 0, own_name, 1, n, n, functions, name_pointers, ordinals)
    body += struct.pack(f"<{n}I", *target_rvas) + struct.pack(f"<{n}I", *name_rvas)
    body += struct.pack(f"<{n}H", *range(n)) + bytes(strings)
    raw_size = _align(len(body), FILE_ALIGN)
    coff = struct.pack("<HHIIIHH", MACHINE_AMD64, 1, 0, 0, 0, 240, DLL_CHARACTERISTICS)
    optional = struct.pack(
        "<HBBIIIIIQIIHHHHHHIIIIHHQQQQII",
        0x20B, 14, 0, 0, raw_size, 0, 0, SECTION_RVA, IMAGE_BASE, SECTION_ALIGN, FILE_ALIGN,
        6, 0, 0, 0, 6, 0, 0, _align(SECTION_RVA + len(body), SECTION_ALIGN), FILE_ALIGN, 0,
        3, 0x0140, 0x100000, 0x1000, 0x100000, 0x1000, 0, 16,
    )  # fmt: skip
    directories = bytearray(16 * 8)
    struct.pack_into("<II", directories, 0, SECTION_RVA, len(body))  # [0]: the export table
    section = struct.pack("<8sIIIIIIHHI", b".rdata", len(body), SECTION_RVA, raw_size, FILE_ALIGN, 0, 0, 0, 0,
                          SECTION_FLAGS)  # fmt: skip
    dos = bytearray(64)
    dos[0:2] = b"MZ"
    struct.pack_into("<I", dos, 0x3C, len(dos))
    headers = bytes(dos) + b"PE\0\0" + coff + optional + bytes(directories) + section
    return headers.ljust(FILE_ALIGN, b"\0") + body.ljust(raw_size, b"\0")


def install_icu(icu_dlls: Path, system32: Path) -> Path:
    """Copy ICU's DLLs into ``system32`` and write ``icuuc.dll`` forwarding the plain names; its path."""
    (versioned,) = (p for p in icu_dlls.glob("*.dll") if VERSIONED_UC.fullmatch(p.name))
    match = VERSIONED_UC.fullmatch(versioned.name)
    assert match is not None
    suffix = f"_{match.group(1)}"
    for dll in icu_dlls.glob("*.dll"):
        shutil.copyfile(dll, system32 / dll.name)
    target = versioned.name[: -len(".dll")]
    exports = PeImage(versioned.read_bytes()).exports()
    forwards = {name[: -len(suffix)]: f"{target}.{name}" for name in exports if name.endswith(suffix)}
    plain = system32 / "icuuc.dll"
    plain.write_bytes(forwarder_dll("icuuc.dll", forwards))
    return plain


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(f"usage: {sys.argv[0]} FOLDER_WITH_ICU_DLLS SYSTEM32_OF_A_WINE_PREFIX")
    print(f"wrote {install_icu(Path(sys.argv[1]), Path(sys.argv[2]))}")
