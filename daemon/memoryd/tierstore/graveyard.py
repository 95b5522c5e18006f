"""The graveyard: a deleted note's last copy, in a monthly zip kept ``graveyard_days``.

organize deletes a file from forgotten/ only once its bytes are safely in this
month's archive; whole archives are dropped when their month is old enough.
"""

from __future__ import annotations

import contextlib
import os
import zipfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from ..config import Paths
from ..fsutil import replace_durably, temp_name
from .layout import DAY


def graveyard_dir(paths: Paths) -> Path:
    """Where deleted notes are kept, compressed, for ``graveyard_days``."""
    return paths.memoryd_dir / "graveyard"


@dataclass(frozen=True)
class BuriedFile:
    """A file about to be deleted: what goes into the month's graveyard archive."""

    rel: str  # forgotten/x.md
    sha256: str
    data: bytes
    mtime: float = field(default=0.0)

    @property
    def entry(self) -> str:
        return f"{self.sha256[:16]}/{self.rel}"


def graveyard_archive(graveyard: Path, now: float) -> Path:
    return graveyard / (datetime.fromtimestamp(now, UTC).strftime("%Y-%m") + ".zip")


def bury(graveyard: Path, now: float, files: list[BuriedFile]) -> Path:
    """Add ``files`` to this month's archive, crash-safely (copy, append, fsync, replace).

    An entry already there (same hash and path, from a run killed after burying)
    is not added twice.
    """
    import shutil

    archive = graveyard_archive(graveyard, now)
    graveyard.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(archive)
    mode: Literal["a", "w"]
    if archive.exists():
        shutil.copyfile(archive, tmp)
        mode = "a"
    else:
        mode = "w"
    try:
        with zipfile.ZipFile(tmp, mode, compression=zipfile.ZIP_DEFLATED) as zf:
            present = set(zf.namelist())
            for f in files:
                if f.entry in present:
                    continue
                stamp = datetime.fromtimestamp(max(f.mtime, 315532800), UTC).timetuple()[:6]
                info = zipfile.ZipInfo(f.entry, date_time=stamp)
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, f.data)
                present.add(f.entry)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        replace_durably(tmp, archive)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return archive


def expired_archives(graveyard: Path, now: float, keep_days: float) -> list[Path]:
    """Monthly archives whose month ended more than ``keep_days`` ago."""
    out: list[Path] = []
    try:
        names = sorted(os.listdir(graveyard))
    except OSError:
        return out
    for name in names:
        if not name.endswith(".zip") or len(name) != 11:
            continue
        try:
            year, month = int(name[:4]), int(name[5:7])
        except ValueError:
            continue
        nxt = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC).timestamp()
        if now - nxt > keep_days * DAY:
            out.append(graveyard / name)
    return out
