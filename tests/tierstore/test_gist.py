"""Gists: the seed's format, distinctive tags for Chinese and English, the optional summariser."""

from __future__ import annotations

import re
import sys

from memoryd.tierstore.gist import (
    TAGS_LABEL,
    document_frequencies,
    extractive_gist,
    first_sentence,
    make_gist,
    pick_tags,
    term_counts,
)


def parse_gist(text: str) -> tuple[str, list[str], str]:
    """(title, tags, summary) of a gist file, tolerant of ``#title`` without a space."""
    lines = text.splitlines()
    title = ""
    tags: list[str] = []
    rest: list[str] = []
    for i, line in enumerate(lines):
        s = line.strip()
        if not title and s.startswith("#"):
            title = s.lstrip("#").strip()
            continue
        low = s.lower()
        if not tags and (
            s.startswith((TAGS_LABEL + ":", TAGS_LABEL + "：")) or low.startswith("tags:")
        ):
            body = s.split(":", 1)[1] if ":" in s else s.split("：", 1)[1]
            tags = [t.strip() for t in re.split(r"[,，、\s]+", body) if t.strip()]
            rest = lines[i + 1 :]
            break
    return title, tags, "\n".join(rest).strip()


ZH_NOTE = """# 数据库迁移计划

我们决定把数据库迁移到新的服务器。迁移窗口在周六晚上。

## 风险
- 数据库主从切换可能丢失几秒写入。
- 回滚需要两小时。

## 结论
周六晚上执行数据库迁移，张三负责回滚预案。
"""

EN_NOTE = """# Boat trip planning

We settled on Saturday for the boat trip. The marina opens at eight.

## Packing
Sunscreen, life jackets and the cooler. Nothing else.

```python
# not a heading: inside a code fence
print("hello")
```

## Budget
The charter costs 400 euros, split four ways.
"""


def test_gist_has_the_seeds_shape_title_tags_summary():
    gist = extractive_gist(EN_NOTE, "boat.md")
    lines = gist.splitlines()
    assert lines[0] == "# Boat trip planning"
    assert lines[1].startswith("标签: ")
    assert "We settled on Saturday for the boat trip." in gist
    assert "- Packing: Sunscreen, life jackets and the cooler." in gist
    assert "- Budget: The charter costs 400 euros, split four ways." in gist
    assert "not a heading" not in gist and "The marina opens" not in gist  # first sentences only
    title, tags, summary = parse_gist(gist)
    assert title == "Boat trip planning" and "boat" in tags and "Budget" in summary


def test_chinese_tags_are_whole_recurring_words_not_whitespace_tokens():
    tags = pick_tags(ZH_NOTE, "数据库迁移计划")
    assert tags[0] in ("数据库", "数据库迁移")  # the recurring word, whole
    assert "回滚" in tags and "周六晚上" in tags
    # No fragments that cut a word in two.
    assert not any(t in ("据库", "库迁", "数据") for t in tags)
    gist = extractive_gist(ZH_NOTE, "2026-03-01.md")
    assert gist.startswith("# 数据库迁移计划\n标签: 数据库")  # 数据库 or 数据库迁移
    assert "- 风险: 数据库主从切换可能丢失几秒写入。" in gist
    assert "- 结论: 周六晚上执行数据库迁移，张三负责回滚预案。" in gist


def test_term_counts_absorb_fragments_into_the_longer_recurring_word():
    counts = term_counts("服务器重启。服务器扩容。服务器监控")
    assert counts["服务器"] == 3
    assert "服务" not in counts and "务器" not in counts


def test_distinctive_tags_prefer_words_rare_in_the_rest_of_the_store():
    others = [f"# Meeting {i}\nThe meeting discussed the budget again." for i in range(20)]
    df, n = document_frequencies(others)
    note = "# Meeting\nThe meeting budget: kubernetes migration, kubernetes nodes. budget budget."
    plain = pick_tags(note, "Meeting")
    weighted = pick_tags(note, "Meeting", df, n)
    assert plain[0] in ("budget", "meeting")
    assert weighted[0] == "kubernetes"


def test_first_sentence_handles_chinese_lists_and_long_text():
    assert first_sentence(["第一句。第二句。"]) == "第一句。"
    assert first_sentence(["- [x] done item", "- other"]) == "done item"
    assert first_sentence(["| a | b |", "|---|---|"]) == ""
    long = first_sentence(["x" * 400])
    assert len(long) == 160 and long.endswith("…")


def test_notes_without_headings_or_text_still_get_a_gist():
    gist = extractive_gist("just one line about espresso ratios\n", "coffee.md")
    assert gist.splitlines()[0] == "# just one line about espresso ratios"
    assert extractive_gist("", "empty-note.md").splitlines()[0] == "# empty-note"


def test_summarizer_command_output_is_used_and_given_the_seeds_header():
    cmd = f"{sys.executable} -c \"import sys; d=sys.stdin.read(); print('LLM says:', len(d))\""
    out = make_gist(EN_NOTE, "boat.md", command=cmd, timeout=20)
    assert out.method == "command" and out.error is None
    lines = out.text.splitlines()
    assert lines[0] == "# Boat trip planning" and lines[1].startswith("标签:")
    assert lines[2] == f"LLM says: {len(EN_NOTE)}"


def test_summarizer_output_with_its_own_title_is_kept_as_is():
    cmd = f"{sys.executable} -c \"print('# Own title'); print('标签: a, b'); print('text')\""
    out = make_gist(EN_NOTE, "boat.md", command=cmd, timeout=20)
    assert out.text == "# Own title\n标签: a, b\ntext\n"


def test_a_failing_slow_or_missing_summarizer_falls_back_to_the_extractive_gist():
    extractive = extractive_gist(EN_NOTE, "boat.md")
    failing = make_gist(EN_NOTE, "boat.md", command=f"{sys.executable} -c 'raise SystemExit(3)'")
    assert failing.method == "extractive" and "exit status 3" in failing.error
    assert failing.text == extractive
    slow = make_gist(
        EN_NOTE,
        "boat.md",
        command=f"{sys.executable} -c 'import time; time.sleep(5)'",
        timeout=0.5,
    )
    assert slow.method == "extractive" and "timed out" in slow.error
    missing = make_gist(EN_NOTE, "boat.md", command="/nonexistent/summarizer --flag")
    assert missing.method == "extractive" and "cannot run" in missing.error
    empty = make_gist(EN_NOTE, "boat.md", command="true")
    assert empty.method == "extractive" and empty.error == "empty output"


def test_a_note_with_front_matter_and_no_heading_is_titled_by_its_text_not_the_fence():
    """A note opening with YAML front matter and no heading got the gist title "# ---"."""
    from memoryd.tierstore.gist import title_of

    note = "---\ntags: [sailing]\n---\n\nWe sail to Lofoten on Saturday. Bring boots.\n"
    assert title_of(note, "boat.md") == "We sail to Lofoten on Saturday."
    assert title_of("---\ntags: [x]\n---\n", "boat.md") == "boat"
    assert title_of("\ufeff" + note, "boat.md") == "We sail to Lofoten on Saturday."  # (a BOM)
