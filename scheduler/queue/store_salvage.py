"""Reading a damaged queue file without SQLite's help: its write-ahead log, its pages, its rows.

SQLite itself is the wrong tool for a damaged file. Opened on a 0-byte database it *deletes* the
write-ahead log beside it (even read-only), although that log may hold every task; a log with one bad
frame is silently cut there, and the next write overwrites what followed. So the queue inspects the
files as bytes first (:func:`inspect_files`) and, when they fail, :func:`salvage` rebuilds the
database image from the main file plus every intact log frame, then reads rows from it twice: through
SQLite (every id the table, its index or ``sqlite_sequence`` names, one lookup each, so one bad page
loses only its own rows) and straight from the table's leaf pages (rows whose interior pages or schema
are gone). Nothing here writes a file.

File formats: https://www.sqlite.org/fileformat2.html (the WAL: section 4; b-tree pages: 1.6;
records: 2.1).
"""

from __future__ import annotations

import contextlib
import sqlite3
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WAL_MAGIC = (0x377F0682, 0x377F0683)  # little- / big-endian checksums
WAL_HEADER_BYTES = 32
FRAME_HEADER_BYTES = 24
DB_MAGIC = b"SQLite format 3\x00"
TABLE_LEAF = 0x0D
#: The columns of the ``tasks`` table in the order CREATE TABLE and the migrations give them (schema 4).
TASK_TABLE_COLUMNS: tuple[str, ...] = (
    "id",
    "spec",
    "name",
    "kind",
    "state",
    "device",
    "env",
    "reason",
    "exit_code",
    "attempts",
    "submitted_at",
    "started_at",
    "ended_at",
    "log_path",
    "pid",
    "pid_create_time",
    "priority",
    "position",
    "queued_at",
    "not_before",
    "overtakes",
    "attempts_before",  # schema 2 (ALTER TABLE ADD COLUMN)
    "machine",  # schema 3 (the cluster's), the same way
    "remote_id",
    "remote_state",
    "energy_j",  # schema 4, the same way
    "energy_shared",
    "paused_at",  # schema 6, the same way
    "paused_s",
    "energy_estimated_s",  # schema 7, the same way
)
#: How many values a row of schema 1 holds. A column added by ALTER TABLE is not written into the rows
#: already there: a row saved before the migration (or in a schema-1 file) holds only these, and SQLite
#: reads the missing ones as their defaults. The page reader takes any count from this up to the table's
#: (21 in a schema-1 row, 22 in a schema-2 row, 25 in a schema-3 row, 27 in a schema-4 or -5 row, 29
#: in a schema-6 row).
SCHEMA_1_COLUMN_COUNT = 21
#: More ids than this past the highest row seen are not probed one by one (a garbled sequence).
MAX_ID_PROBE_GAP = 100_000


def wal_path(db: Path) -> Path:
    return db.with_name(db.name + "-wal")


def shm_path(db: Path) -> Path:
    return db.with_name(db.name + "-shm")


# --------------------------------------------------------------------------------------------------
# The write-ahead log


@dataclass(frozen=True)
class WalFrame:
    index: int  # 0-based position in the file
    page_number: int
    commit_pages: int  # the database size in pages after this commit; 0 for a frame inside a transaction
    data_offset: int
    intact: bool  # its checksum matches, counted from the frame before it: one bad frame spoils only itself


@dataclass(frozen=True)
class WalScan:
    """What a WAL file holds. ``frames`` are those of its current generation (same salts)."""

    size_bytes: int
    page_size: int | None
    header_ok: bool
    frames: tuple[WalFrame, ...]
    sqlite_frames: int  # how many frames SQLite itself uses: the intact chain up to its last commit
    damaged_at: int | None  # the first bad frame that has committed frames of this generation after it

    @property
    def committed_after_sqlite(self) -> int:
        """Committed transactions of this generation that SQLite would drop."""
        return sum(1 for f in self.frames[self.sqlite_frames :] if f.intact and f.commit_pages)

    @property
    def holds_commits(self) -> bool:
        return any(f.intact and f.commit_pages for f in self.frames)


def _checksum(data: bytes, s0: int, s1: int, big_endian: bool) -> tuple[int, int]:
    words = struct.unpack(f"{'>' if big_endian else '<'}{len(data) // 4}I", data)
    for a, b in zip(words[0::2], words[1::2], strict=True):
        s0 = (s0 + a + s1) & 0xFFFFFFFF
        s1 = (s1 + b + s0) & 0xFFFFFFFF
    return s0, s1


def scan_wal(data: bytes) -> WalScan:
    """Parse a WAL file's bytes: its frames, which of them SQLite would use, and whether it is damaged."""
    size = len(data)
    if size < WAL_HEADER_BYTES:
        return WalScan(size, None, False, (), 0, None)
    magic, _version, page_size, _seq, salt1, salt2, ck1, ck2 = struct.unpack(">8I", data[:WAL_HEADER_BYTES])
    big = magic == WAL_MAGIC[1]
    header_ok = magic in WAL_MAGIC and _valid_page_size(page_size)
    header_ok = header_ok and _checksum(data[:24], 0, 0, big) == (ck1, ck2)
    if not _valid_page_size(page_size):
        page_size = 4096  # a garbled header: assume the usual page size
    frame_bytes = FRAME_HEADER_BYTES + page_size
    count = (size - WAL_HEADER_BYTES) // frame_bytes
    if count == 0:
        return WalScan(size, page_size, header_ok, (), 0, None)
    if not header_ok:
        # The generation is that of the first frame: a restarted log always starts writing there.
        salt1, salt2 = struct.unpack(">2I", data[WAL_HEADER_BYTES + 8 : WAL_HEADER_BYTES + 16])
    frames: list[WalFrame] = []
    prev: tuple[int, int] | None = (ck1, ck2) if header_ok else None
    chain_ok = header_ok  # SQLite ignores the whole log when its header is bad
    sqlite_frames = 0
    first_bad: int | None = None
    damaged_at: int | None = None
    for i in range(count):
        off = WAL_HEADER_BYTES + i * frame_bytes
        pgno, commit, fs1, fs2, fck1, fck2 = struct.unpack(">6I", data[off : off + FRAME_HEADER_BYTES])
        if (fs1, fs2) != (salt1, salt2):
            chain_ok = False  # SQLite stops at the first frame of another generation
            continue
        body = data[off + FRAME_HEADER_BYTES : off + frame_bytes]
        if prev is None:
            intact = pgno > 0  # nothing to check the first frame against without the header
        else:
            s = _checksum(data[off : off + 8], prev[0], prev[1], big)
            intact = pgno > 0 and _checksum(body, s[0], s[1], big) == (fck1, fck2)
        frames.append(WalFrame(i, pgno, commit, off + FRAME_HEADER_BYTES, intact))
        prev = (fck1, fck2)  # the next frame is checked against what this one says, intact or not
        if chain_ok and intact:
            if commit:
                sqlite_frames = len(frames)
            continue
        chain_ok = False
        if first_bad is None:
            first_bad = len(frames) - 1 if header_ok else 0
        if intact and commit and damaged_at is None:
            damaged_at = frames[first_bad].index
    return WalScan(size, page_size, header_ok, tuple(frames), sqlite_frames, damaged_at)


def _valid_page_size(n: int) -> bool:
    return 512 <= n <= 65536 and n & (n - 1) == 0


# --------------------------------------------------------------------------------------------------
# Inspection: does a queue file need salvage?


@dataclass(frozen=True)
class Damage:
    """Why a queue file cannot be trusted as SQLite would read it, in words."""

    what: str


def inspect_files(db: Path) -> Damage | None:
    """Check the main file and its WAL as bytes (never through SQLite, which may delete the WAL).

    The full page check (``PRAGMA quick_check``) is :func:`check_pages`, run after this passes.
    Raises OSError when the files cannot be read at all.
    """
    main_size = db.stat().st_size if db.exists() else None
    wal = wal_path(db)
    scan = scan_wal(wal.read_bytes()) if wal.exists() else None
    if main_size is not None and main_size > 0:
        with db.open("rb") as f:
            head = f.read(100)
        if not head.startswith(DB_MAGIC):
            return Damage(f"it is not an SQLite database (it starts with {head[:16]!r})")
    if scan is not None and scan.holds_commits and not main_size:
        commits = sum(1 for f in scan.frames if f.intact and f.commit_pages)
        empty = "is missing" if main_size is None else "is empty (0 bytes)"
        return Damage(f"the file {empty} but its write-ahead log holds {commits} committed change(s)")
    if scan is not None and scan.damaged_at is not None:
        lost = scan.committed_after_sqlite
        return Damage(
            f"its write-ahead log is damaged at frame {scan.damaged_at + 1} of {len(scan.frames)}: "
            f"SQLite would drop the {lost} committed change(s) after it"
        )
    return None


def check_pages(db: Path, known_version: int) -> Damage | None:
    """SQLite's own page check, on a read-only connection (which never checkpoints or deletes anything).

    Call only after :func:`inspect_files` found the files sound (a 0-byte main file would lose its WAL).
    A file from a newer gputray (``user_version`` above ``known_version``) is not judged here.
    """
    try:
        con = sqlite3.connect(f"{db.absolute().as_uri()}?mode=ro", uri=True, timeout=10.0)
    except sqlite3.Error as exc:
        return Damage(f"SQLite cannot open it ({exc})")
    try:
        version = int(con.execute("PRAGMA user_version").fetchone()[0])
        if version > known_version:
            return None
        rows = con.execute("PRAGMA quick_check").fetchall()
        problems = [str(r[0]) for r in rows if r and r[0] != "ok"]
        lines = [ln for p in problems for ln in p.splitlines() if ln and not ln.startswith("***")]
        if problems:
            more = f" (and {len(lines) - 1} more problem(s))" if len(lines) > 1 else ""
            return Damage(f"its pages fail SQLite's check: {(lines or problems)[0]}{more}")
        if version >= 1 and not con.execute("SELECT 1 FROM sqlite_master WHERE name = 'tasks'").fetchone():
            return Damage("its tasks table is missing")
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.OperationalError) and ("locked" in str(exc) or "busy" in str(exc)):
            return None  # another process holds it: not damage (the caller's own open says so)
        return Damage(f"SQLite finds it damaged ({exc})")
    finally:
        con.close()
    return None


# --------------------------------------------------------------------------------------------------
# The database image: main file + intact WAL frames


def build_image(db: Path) -> bytes:
    """The database as its files hold it: the main file with every intact committed WAL frame applied
    in order (also those after a damaged frame, which SQLite would drop), in rollback-journal mode."""
    main = db.read_bytes() if db.exists() else b""
    wal = wal_path(db)
    wal_bytes = wal.read_bytes() if wal.exists() else b""
    scan = scan_wal(wal_bytes)
    page_size = scan.page_size or _db_page_size(main) or 4096
    image = bytearray(main)
    last_commit = max((i for i, f in enumerate(scan.frames) if f.intact and f.commit_pages), default=-1)
    pages = 0
    for f in scan.frames[: last_commit + 1]:
        if not f.intact:
            continue
        start = (f.page_number - 1) * page_size
        if len(image) < start + page_size:
            image.extend(bytes(start + page_size - len(image)))
        image[start : start + page_size] = wal_bytes[f.data_offset : f.data_offset + page_size]
        if f.commit_pages:
            pages = f.commit_pages
    if pages and len(image) > pages * page_size:
        del image[pages * page_size :]
    if len(image) >= 100 and image.startswith(DB_MAGIC):
        image[18] = image[19] = 1  # legacy (rollback) mode: read without a WAL
    return bytes(image)


def _db_page_size(main: bytes) -> int | None:
    if len(main) < 100 or not main.startswith(DB_MAGIC):
        return None
    raw = struct.unpack(">H", main[16:18])[0]
    size = 65536 if raw == 1 else raw
    return size if _valid_page_size(size) else None


# --------------------------------------------------------------------------------------------------
# Rows


@dataclass(frozen=True)
class Salvage:
    """The task rows that could be read from a damaged queue file."""

    rows: dict[int, dict[str, Any]]  # id -> column name -> value, as stored
    highest_id: int  # the highest id ever handed out, as far as can be told
    unreadable_ids: tuple[int, ...]  # ids the table's index or sequence names whose row could not be read
    from_pages: int  # rows found only by reading leaf pages directly (SQLite could not reach them)

    def summary(self) -> str:
        """Such as "recovered 33 of 35 task(s); no readable row for #7, #12 ..."."""
        n = len(self.rows)
        if not self.unreadable_ids:
            return f"recovered {n} task(s), every one it held" if n else "it held no readable task"
        missing = _id_list(self.unreadable_ids)
        return (
            f"recovered {n} of {n + len(self.unreadable_ids)} task(s); "
            f"no readable row for {missing} (lost, unless they had been removed)"
        )


def _id_list(ids: Sequence[int], limit: int = 12) -> str:
    shown = ", ".join(f"#{i}" for i in ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def salvage(db: Path) -> Salvage:
    """Every task row readable from ``db`` and its WAL. Reads the files; writes nothing."""
    return salvage_image(build_image(db))


def salvage_image(image: bytes) -> Salvage:
    rows: dict[int, dict[str, Any]] = {}
    listed: set[int] = set()
    highest = 0
    columns = TASK_TABLE_COLUMNS
    if image.startswith(DB_MAGIC):
        con = sqlite3.connect(":memory:")
        try:
            with contextlib.suppress(sqlite3.Error):
                con.deserialize(image)
            columns = _table_columns(con) or TASK_TABLE_COLUMNS
            listed, highest = _ids_sqlite_names(con)
            wanted = sorted(listed | set(range(1, _probe_limit(highest, listed) + 1)))
            select = f"SELECT {', '.join(columns)} FROM tasks WHERE id = ?"
            for task_id in wanted:
                try:
                    row = con.execute(select, (task_id,)).fetchone()
                except sqlite3.Error:
                    continue
                if row is not None:
                    rows[task_id] = dict(zip(columns, row, strict=True))
        finally:
            con.close()
    found_in_pages = 0
    fewest = min(SCHEMA_1_COLUMN_COUNT, len(columns))
    for rowid, values in _leaf_rows(image, range(fewest, len(columns) + 1)):
        if rowid in rows or rowid <= 0 or not isinstance(values[1], str):
            continue
        row = dict(zip(columns[: len(values)], values, strict=True))
        row["id"] = rowid
        rows[rowid] = row
        found_in_pages += 1
    highest = max([highest, *rows])
    unreadable = tuple(sorted(i for i in listed | set(range(1, highest + 1)) if i not in rows))
    if highest > (max(rows, default=0) + MAX_ID_PROBE_GAP):
        unreadable = tuple(i for i in unreadable if i in listed)
    return Salvage(dict(sorted(rows.items())), highest, unreadable, found_in_pages)


def _probe_limit(highest: int, listed: set[int]) -> int:
    top = max(listed, default=0)
    return highest if highest <= top + MAX_ID_PROBE_GAP else top


def _table_columns(con: sqlite3.Connection) -> tuple[str, ...] | None:
    try:
        cols = tuple(str(r[1]) for r in con.execute("PRAGMA table_info(tasks)").fetchall())
    except sqlite3.Error:
        return None
    return cols if cols and cols[0] == "id" and "spec" in cols else None


def _ids_sqlite_names(con: sqlite3.Connection) -> tuple[set[int], int]:
    """Ids the table scan, the state index and sqlite_sequence name (each read as far as it goes)."""
    ids: set[int] = set()
    for query in (
        "SELECT id FROM tasks ORDER BY id",
        "SELECT id FROM tasks ORDER BY id DESC",
        "SELECT id FROM tasks INDEXED BY tasks_state WHERE state IS NOT NULL OR state IS NULL",
    ):
        with contextlib.suppress(sqlite3.Error):
            for (task_id,) in con.execute(query):
                if isinstance(task_id, int):
                    ids.add(task_id)
    highest = 0
    with contextlib.suppress(sqlite3.Error):
        row = con.execute("SELECT seq FROM sqlite_sequence WHERE name = 'tasks'").fetchone()
        if row is not None and isinstance(row[0], int) and row[0] > 0:
            highest = row[0]
    return ids, max([highest, *ids])


# --------------------------------------------------------------------------------------------------
# Leaf pages, read directly


def _leaf_rows(image: bytes, columns: range) -> Iterator[tuple[int, list[Any]]]:
    """(rowid, values) of every record with a count of values in ``columns`` on a table leaf page outside
    the freelist."""
    page_size = _db_page_size(image) or 4096
    reserved = image[20] if len(image) > 20 else 0
    usable = page_size - reserved
    if usable < 480:
        return
    pages = len(image) // page_size
    free = _freelist(image, page_size, pages)
    for pgno in range(1, pages + 1):
        if pgno in free:
            continue
        base = (pgno - 1) * page_size
        hdr = base + (100 if pgno == 1 else 0)
        if image[hdr] != TABLE_LEAF:
            continue
        try:
            cells = struct.unpack(">H", image[hdr + 3 : hdr + 5])[0]
            for k in range(cells):
                ptr = struct.unpack(">H", image[hdr + 8 + 2 * k : hdr + 10 + 2 * k])[0]
                found = _cell(image, base, base + ptr, page_size, usable, pages, columns)
                if found is not None:
                    yield found
        except (struct.error, IndexError, ValueError):
            continue


def _freelist(image: bytes, page_size: int, pages: int) -> set[int]:
    free: set[int] = set()
    try:
        trunk = struct.unpack(">I", image[32:36])[0]
        while 0 < trunk <= pages and trunk not in free:
            free.add(trunk)
            off = (trunk - 1) * page_size
            nxt, n = struct.unpack(">2I", image[off : off + 8])
            for j in range(min(n, page_size // 4 - 2)):
                free.add(struct.unpack(">I", image[off + 8 + 4 * j : off + 12 + 4 * j])[0])
            trunk = nxt
    except struct.error:
        pass
    return free


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = 0
    for i in range(9):
        byte = buf[pos + i]
        if i == 8:
            return (value << 8) | byte, pos + 9
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, pos + i + 1
    raise ValueError("bad varint")  # pragma: no cover - the loop always returns


def _cell(
    image: bytes, base: int, pos: int, page_size: int, usable: int, pages: int, columns: range
) -> tuple[int, list[Any]] | None:
    size, pos = _varint(image, pos)
    rowid, pos = _varint(image, pos)
    if size > 1 << 30:
        return None
    x = usable - 35
    if size <= x:
        payload = image[pos : pos + size]
    else:
        m = ((usable - 12) * 32 // 255) - 23
        k = m + (size - m) % (usable - 4)
        local = k if k <= x else m
        payload_parts = [image[pos : pos + local]]
        nxt = struct.unpack(">I", image[pos + local : pos + local + 4])[0]
        remaining = size - local
        seen: set[int] = set()
        while remaining > 0:
            if not 0 < nxt <= pages or nxt in seen:
                return None  # a broken overflow chain: the row is not readable
            seen.add(nxt)
            off = (nxt - 1) * page_size
            nxt = struct.unpack(">I", image[off : off + 4])[0]
            chunk = image[off + 4 : off + 4 + min(remaining, usable - 4)]
            payload_parts.append(chunk)
            remaining -= len(chunk)
        payload = b"".join(payload_parts)
    if len(payload) != size:
        return None
    values = _record(payload)
    if values is None or len(values) not in columns or values[0] is not None:
        return None
    return (rowid if rowid < 1 << 63 else rowid - (1 << 64)), values


def _record(payload: bytes) -> list[Any] | None:
    try:
        header_size, pos = _varint(payload, 0)
        types = []
        while pos < header_size:
            t, pos = _varint(payload, pos)
            types.append(t)
        out: list[Any] = []
        pos = header_size
        for t in types:
            value, pos = _value(payload, pos, t)
            out.append(value)
        if pos != len(payload):
            return None
        return out
    except (IndexError, ValueError, struct.error, UnicodeDecodeError):
        return None


_INT_WIDTHS = {1: 1, 2: 2, 3: 3, 4: 4, 5: 6, 6: 8}


def _value(buf: bytes, pos: int, serial_type: int) -> tuple[Any, int]:
    if serial_type == 0:
        return None, pos
    if serial_type in _INT_WIDTHS:
        n = _INT_WIDTHS[serial_type]
        if pos + n > len(buf):
            raise ValueError("short integer")
        return int.from_bytes(buf[pos : pos + n], "big", signed=True), pos + n
    if serial_type == 7:
        return struct.unpack(">d", buf[pos : pos + 8])[0], pos + 8
    if serial_type in (8, 9):
        return serial_type - 8, pos
    if serial_type >= 12:
        n = (serial_type - 12) // 2
        if pos + n > len(buf):
            raise ValueError("short text")
        raw = buf[pos : pos + n]
        return (raw.decode("utf-8") if serial_type % 2 else raw), pos + n
    raise ValueError(f"reserved serial type {serial_type}")
