"""OpenClaw's names and settings parsed the way it builds them: import-archive names
(planSessionJsonlArchiveMove), the Active Memory plugin's transcriptDir."""

from __future__ import annotations

import re
import uuid

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from memoryd.ingest import sources as src

pytestmark = pytest.mark.unit

# Session keys (`agent:<id>:…`) and what follows: channels, addresses, phone numbers, threads.
KEY = st.text(alphabet="abcxyz019:.-_@+/ #é", max_size=150).map(lambda rest: f"agent:main:{rest}")
ORIGINAL = st.sampled_from(
    [
        "{id}.jsonl",
        "{id}-topic-3.jsonl",
        "2026-03-06T05-00-00.000Z_{id}.jsonl",
        "{id}.jsonl.reset.2026-03-06T05-00-00.000Z",
        "{id}.jsonl.deleted.2026-03-06T05-00-00.000Z",
    ]
)


def openclaw_slug(key: str) -> str:
    """OpenClaw's keySlug: runs outside ``[A-Za-z0-9_.-]`` become ``_``, 120 characters."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", key)[:120] or "session"


def archive_name(key: str, original: str, ms: int, attempt: int) -> str:
    base = re.sub(r"[^A-Za-z0-9_.-]+", "_", original)[:160] or "artifact"
    return f"{openclaw_slug(key)}.{base}.imported-{ms}" + (f".{attempt}" if attempt else "")


@given(
    key=KEY,
    original=ORIGINAL,
    ms=st.integers(1_600_000_000_000, 2_000_000_000_000),
    attempt=st.integers(0, 99),
)
def test_the_key_slug_is_read_back_whole(key, original, ms, attempt):
    """The slug comes back as written, dots and all, whether the copy's session id is known
    (its header) or not (read from the name), for every form of original file name."""
    slug = openclaw_slug(key)
    assume("jsonl" not in slug)
    session = str(uuid.UUID(int=ms * 100 + attempt))
    name = archive_name(key, original.format(id=session), ms, attempt)
    assert src.classify_name(name) == src.IMPORTED
    assert src.imported_key_slug(name, session) == slug
    if "-topic-" not in original:  # (a topic file's id is its header's)
        assert src.imported_session_id(name) == session
    if re.search(r"\.\d{4}-\d{2}-\d{2}T", slug) is None:  # a slug that looks like no time
        assert src.imported_key_slug(name, "") == slug
        assert src.imported_key_slug(name, "another-session") == slug


def test_a_retry_suffix_is_part_of_the_archive_name():
    name = "agent_main_main.s1.jsonl.imported-1772010842000.12"
    assert src.classify_name(name) == src.IMPORTED
    assert src.imported_key_slug(name, "s1") == "agent_main_main"


@pytest.mark.parametrize(
    ("setting", "folder"),
    [
        ("recall", "recall"),
        ("  runs/./2026 / ", "runs/2026"),
        ("../../../etc", "etc"),
        ("/srv/recall", "srv/recall"),
        ("a\\..\\b", "a/b"),
        ("C:/recall", "active-memory"),
        ("../..", "active-memory"),
        ("", "active-memory"),
        (42, "active-memory"),
    ],
)
def test_the_active_memory_transcript_dir_stays_under_the_plugins_folder(setting, folder):
    """The plugin's ``transcriptDir`` as it normalizes it: never an absolute path, never up."""
    from memoryd.config import active_memory_transcript_dir

    oc = {"plugins": {"entries": {"active-memory": {"config": {"transcriptDir": setting}}}}}
    assert active_memory_transcript_dir(oc) == folder
