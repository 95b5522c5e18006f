"""Gists: the short form a note takes in ``gist/`` (``#title / 标签: tags / summary``).

A gist must let a reader *find* a topic a month later, not retell it: the title, the section
headings with the first sentence of each, and a handful of tags (the note's most distinctive
terms by tf-idf over the store, title and headings weighted up). The default is extractive
and deterministic, pure functions over strings; CJK runs are cut at function characters
(:func:`term_counts`). ``summarizer_command`` (optional) runs a person's own summariser
(note on stdin, gist on stdout, within a timeout); whatever goes wrong with it, the
extractive gist is used and the failure logged.
"""

from __future__ import annotations

import math
import os
import re
import shlex
import subprocess
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

TAGS_LABEL = "标签"
MAX_TAGS = 5
MAX_SENTENCE = 160
MAX_SUMMARY_LINES = 12
_MAX_GRAM = 6

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_\-]{2,}")
# Characters that almost never start or end a content word: cutting CJK runs at
# them turns "我们决定把数据库迁移到新的服务器" into 决定 / 数据库迁移到新 / 服务器.
_CJK_BREAKS = set(
    "的了是在和与及或也就都而着把被对将从这那我你他她它们吗呢吧啊呀么之其并但又再还很个些该让给向于"
)
_STOP = frozenset(
    " ".join(
        (
            "a about above after again all also am an and any are as at be because been",
            "before being below between both but by can could did do does doing done down",
            "during each few for from further had has have having he her here hers him",
            "his how however i if in into is it its itself just me more most my no nor",
            "not now of off on once only or other our ours out over own same she should",
            "so some such than that the their theirs them then there these they this",
            "those through to too under until up very was we were what when where which",
            "while who whom why will with would you your yours yes via per use used using",
            "get got make made let one two three new next last first also still need",
            "needs note notes todo etc see",
        )
    ).split()
)
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s*(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
_SENTENCE_END = re.compile(r"(?<=[。！？!?；;])|(?<=\.)(?=\s|$)")


# --------------------------------------------------------------------------- terms


def term_counts(text: str) -> Counter[str]:
    """Candidate tag terms of ``text`` with how often each occurs.

    Latin: lower-cased words of three or more letters, minus stop words. CJK: runs
    are cut at function characters; every 2–4 character n-gram of a piece is a
    candidate, a 3–4 character one only if it recurs (or is a whole piece), and an
    n-gram that only ever occurs inside one longer candidate gives way to it
    (数据 inside 数据库 → 数据库), so the words that survive are the recurring ones.
    """
    counts: Counter[str] = Counter()
    for word in _LATIN_WORD.findall(text):
        w = word.lower().strip("-_")
        if len(w) >= 3 and w not in _STOP and not w.isdigit():
            counts[w] += 1
    grams: Counter[str] = Counter()
    whole: set[str] = set()
    for run in _CJK_RUN.findall(text):
        for piece in _split_cjk(run):
            if 2 <= len(piece) <= _MAX_GRAM:
                whole.add(piece)
            for n in range(2, _MAX_GRAM + 1):
                for i in range(len(piece) - n + 1):
                    grams[piece[i : i + n]] += 1

    def valid(gram: str) -> bool:
        return grams[gram] >= 2 or gram in whole

    absorbed: set[str] = set()
    for n in range(_MAX_GRAM, 2, -1):
        for gram, count in grams.items():
            if len(gram) == n and valid(gram):
                for sub in (gram[:-1], gram[1:]):
                    if grams.get(sub) == count:
                        absorbed.add(sub)
    for gram, count in grams.items():
        if gram not in absorbed and valid(gram):
            counts[gram] += count
    return counts


def _split_cjk(run: str) -> list[str]:
    out: list[str] = []
    piece: list[str] = []
    for ch in run:
        if ch in _CJK_BREAKS:
            if piece:
                out.append("".join(piece))
            piece = []
        else:
            piece.append(ch)
    if piece:
        out.append("".join(piece))
    return out


def document_frequencies(texts: Iterable[str]) -> tuple[Counter[str], int]:
    """(term → number of texts containing it, number of texts): the background for tags."""
    df: Counter[str] = Counter()
    n = 0
    for text in texts:
        df.update(term_counts(text).keys())
        n += 1
    return df, n


def pick_tags(
    text: str,
    emphasised: str = "",
    df: Mapping[str, int] | None = None,
    n_docs: int = 0,
    limit: int = MAX_TAGS,
) -> list[str]:
    """The ``limit`` most distinctive terms of ``text``; ``emphasised`` text counts double.

    A term that is part of a better one already chosen (数据 inside 数据库) is skipped,
    so the tags say different things.
    """
    tf = term_counts(text)
    if not tf:
        return []
    emphasised = emphasised.lower()
    df = df or {}
    scored = []
    for term, count in tf.items():
        idf = math.log((n_docs + 1) / (df.get(term, 0) + 1)) + 1.0
        longer = 1.0 + 0.25 * (min(len(term), 6) - 2) if not term.isascii() else 1.0
        weight = count * idf * longer * (2.0 if term in emphasised else 1.0)
        scored.append((-weight, -len(term), term))
    scored.sort()
    tags: list[str] = []
    for _, _, term in scored:
        if any(term in t or t in term for t in tags):
            continue
        tags.append(term)
        if len(tags) == limit:
            break
    return tags


# --------------------------------------------------------------------------- structure


@dataclass(frozen=True)
class Section:
    heading: str  # "" for text before the first heading
    level: int
    body: list[str]


def sections(text: str) -> list[Section]:
    """Markdown sections (code fences skipped, so a ``#`` comment is not a heading)."""
    out: list[Section] = []
    heading, level = "", 0
    body: list[str] = []
    fenced = False
    lines = text.removeprefix("\ufeff").splitlines()
    if lines and lines[0].strip() == "---":  # YAML front matter
        for i in range(1, len(lines)):
            if lines[i].strip() in ("---", "..."):
                lines = lines[i + 1 :]
                break
    for line in lines:
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        m = _HEADING.match(line)
        if m and m.group(2):
            if heading or any(b.strip() for b in body):
                out.append(Section(heading, level, body))
            heading, level, body = m.group(2), len(m.group(1)), []
        else:
            body.append(line)
    if heading or any(b.strip() for b in body):
        out.append(Section(heading, level, body))
    return out


def first_sentence(lines: list[str]) -> str:
    """The first sentence of the first paragraph, list markers stripped, at most 160 chars."""
    para: list[str] = []
    for line in lines:
        stripped = _LIST_MARK.sub("", line).strip()
        if not stripped:
            if para:
                break
            continue
        if stripped.startswith("|"):  # tables do not summarise in one sentence
            if para:
                break
            continue
        stripped = stripped.lstrip("> ").strip()
        if not stripped or set(stripped) <= set("-*_= "):  # rules and empty quotes
            continue
        para.append(stripped)
        if _LIST_MARK.match(line):  # a list item is a sentence on its own
            break
    if not para:
        return ""
    joined = para[0]
    for nxt in para[1:]:
        sep = "" if _CJK_RUN.match(nxt[:1]) and _CJK_RUN.search(joined[-1:]) else " "
        joined += sep + nxt
    parts = _SENTENCE_END.split(joined, maxsplit=1)
    sentence = parts[0].strip() if parts and parts[0].strip() else joined.strip()
    if len(sentence) > MAX_SENTENCE:
        sentence = sentence[: MAX_SENTENCE - 1].rstrip() + "…"
    return sentence


def _paragraphs(lines: list[str]) -> list[list[str]]:
    out: list[list[str]] = []
    cur: list[str] = []
    for line in lines:
        if line.strip():
            cur.append(line)
        elif cur:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def title_of(text: str, name: str) -> str:
    """The note's title: first level-1 heading, else any heading, else first line, else name."""
    secs = sections(text)
    for want in (1, None):
        for s in secs:
            if s.heading and (want is None or s.level == want):
                return s.heading
    for line in (line for s in secs for line in s.body):  # (after any front matter)
        if line.strip():
            return first_sentence([line])[:80] or line.strip()[:80]
    stem = name[:-3] if name.endswith(".md") else name
    return stem


# --------------------------------------------------------------------------- gists


def extractive_gist(
    text: str, name: str, df: Mapping[str, int] | None = None, n_docs: int = 0
) -> str:
    """The seed's gist: ``# title``, ``标签: tags``, then one line per section."""
    title = title_of(text, name)
    secs = sections(text)
    headings = " ".join(s.heading for s in secs)
    tags = pick_tags(text, f"{title} {headings} {name}", df, n_docs)
    lines = [f"# {title}", f"{TAGS_LABEL}: {', '.join(tags)}"]
    summary: list[str] = []
    for s in secs:
        sentence = first_sentence(s.body)
        if s.heading and s.heading == title:
            if sentence:
                summary.append(sentence)
        elif s.heading:
            summary.append(f"- {s.heading}: {sentence}" if sentence else f"- {s.heading}")
        else:  # text without a heading: the first sentence of its first paragraphs
            for para in _paragraphs(s.body)[:4]:
                sentence = first_sentence(para)
                if sentence and sentence != title and len(summary) < 3:
                    summary.append(sentence)
        if len(summary) >= MAX_SUMMARY_LINES:
            break
    if not summary:
        summary.append(first_sentence(text.splitlines()) or title)
    lines.extend(summary)
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class GistOutcome:
    text: str
    method: str  # "extractive" | "command"
    error: str | None = None  # why the command was not used


def make_gist(
    text: str,
    name: str,
    *,
    command: str = "",
    timeout: float = 30.0,
    df: Mapping[str, int] | None = None,
    n_docs: int = 0,
) -> GistOutcome:
    """The gist of a note: the summarizer command's if configured and working, else extractive."""
    if not command.strip():
        return GistOutcome(extractive_gist(text, name, df, n_docs), "extractive")
    error = None
    try:
        argv = shlex.split(command)
        proc = subprocess.run(
            argv,
            input=text.encode("utf-8"),
            capture_output=True,
            timeout=timeout,
            env={**os.environ, "MEMORYD_NOTE_NAME": name},
            check=False,
        )
        out = proc.stdout.decode("utf-8", errors="replace").strip()
        if proc.returncode != 0:
            err = proc.stderr.decode("utf-8", errors="replace").strip().splitlines()
            error = f"exit status {proc.returncode}" + (f": {err[-1][:200]}" if err else "")
        elif not out:
            error = "empty output"
    except subprocess.TimeoutExpired:
        error = f"timed out after {timeout:g} s"
    except (OSError, ValueError) as exc:
        error = f"cannot run: {exc}"
    if error is not None:
        return GistOutcome(extractive_gist(text, name, df, n_docs), "extractive", error)
    if not out.startswith("#"):
        # Keep the seed's shape whatever the command writes: title and tags first.
        title = title_of(text, name)
        tags = pick_tags(text, title, df, n_docs)
        out = f"# {title}\n{TAGS_LABEL}: {', '.join(tags)}\n{out}"
    return GistOutcome(out + "\n", "command")
