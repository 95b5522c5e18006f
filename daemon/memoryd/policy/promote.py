"""Promotion: which notes deserve a place in long-term memory.

A file is a candidate with at least ``hits_7d`` hits in 7 days, ``hits_14d`` in 14,
``hits_total`` in all, or a user mark (thresholds from ``[promote]``). A file once promoted is
never nominated again, and long-term files are already where promotion would put them. Its
category, by simple rules on the text (first match wins; docs/lifecycle.md, "Promote"), says
where it belongs: ``skill`` (a procedure: ``skills/<skill>/docs/retrospect.md``),
``preference-or-fact`` (``MEMORY.md``) or ``needs-review`` (a person decides).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..config import PromoteConfig
from ..signals import KIND_LONG_TERM, FileSignals

SKILL, PREFERENCE, REVIEW = "skill", "preference-or-fact", "needs-review"

_CODE = re.compile(r"^\s*(```|~~~)", re.M)
_STEP = re.compile(r"^\s*\d+[.)、]\s+\S", re.M)
_PROMPT = re.compile(r"^\s*\$ \S", re.M)
_SKILL_WORDS = re.compile(
    r"\bhow to\b|\bsteps?\b|\binstall|\bsetup\b|\bset up\b|\bconfigure|\bworkflow\b|"
    r"\brecipe\b|\bprocedure\b|步骤|步驟|流程|操作|命令|配置|安装|安裝|设置|設定|教程",
    re.I,
)
_PREF_WORDS = re.compile(
    r"\bprefers?\b|\bpreference|\balways\b|\bnever\b|\blikes?\b|\bdislikes?\b|\bfavou?rite\b|"
    r"\bmy \w+ is\b|喜欢|喜歡|偏好|习惯|習慣|不要|总是|總是|记住|記住|讨厌|討厭",
    re.I,
)
_KEY_VALUE = re.compile(r"^\s*[-*]?\s*[^:：\n]{1,40}[:：]\s*\S", re.M)


@dataclass(frozen=True)
class PromoteDecision:
    """One file's nomination (or not), with the rules that fired and the evidence."""

    path: str
    candidate: bool
    rules: tuple[str, ...]
    reason: str
    category: str | None = None
    category_reason: str | None = None
    queries: tuple[tuple[str, int], ...] = field(default_factory=tuple)
    numbers: dict[str, int | float | None] = field(default_factory=dict)


def classify(text: str) -> tuple[str, str]:
    """(category, why) by the rules of the module docstring."""
    if _CODE.search(text):
        return SKILL, "contains a code block"
    steps = len(_STEP.findall(text))
    if steps >= 3:
        return SKILL, f"{steps} numbered steps"
    if _PROMPT.search(text):
        return SKILL, "contains shell commands"
    m = _SKILL_WORDS.search(text)
    if m:
        return SKILL, f"procedure words ({m[0]!r})"
    m = _PREF_WORDS.search(text)
    if m:
        return PREFERENCE, f"preference words ({m[0]!r})"
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if lines and len(lines) <= 40 and len(_KEY_VALUE.findall(text)) >= max(2, len(lines) // 2):
        return PREFERENCE, "a short list of key: value facts"
    return REVIEW, "no rule matched; a person decides"


def nomination_rules(
    sig: FileSignals, cfg: PromoteConfig, *, marked: bool, mark_note: str | None = None
) -> list[str]:
    """The rules that nominate ``sig``'s file (empty: none), from its counts alone. Pure.
    Expire asks it too: a current candidate is never archived."""
    rules = []
    if sig.hits_7d >= cfg.hits_7d:
        rules.append(f"{sig.hits_7d} hits in 7 days (≥ {cfg.hits_7d})")
    if sig.hits_14d >= cfg.hits_14d:
        rules.append(f"{sig.hits_14d} hits in 14 days (≥ {cfg.hits_14d})")
    if sig.hits_total >= cfg.hits_total:
        rules.append(f"{sig.hits_total} hits in total (≥ {cfg.hits_total})")
    if marked:
        # A mark memoryd set itself (recall bringing a note back from forgotten/) says so.
        rules.append(f"marked: {mark_note}" if mark_note else "marked by the user")
    return rules


def is_candidate(sig: FileSignals, cfg: PromoteConfig, *, marked: bool, promoted: bool) -> str:
    """Why promote nominates ``sig``'s file now ("" when it does not): :func:`decide`'s
    verdict without the text (the category needs it, the nomination does not). Pure."""
    if sig.kind == KIND_LONG_TERM or promoted:
        return ""
    return "; ".join(nomination_rules(sig, cfg, marked=marked))


def decide(
    sig: FileSignals,
    text: str,
    cfg: PromoteConfig,
    *,
    marked: bool,
    promoted: bool,
    mark_note: str | None = None,
) -> PromoteDecision:
    numbers: dict[str, int | float | None] = {
        "hits_7d": sig.hits_7d,
        "hits_14d": sig.hits_14d,
        "hits_total": sig.hits_total,
        "distinct_queries": sig.distinct_queries,
        "distinct_days": sig.distinct_days,
    }
    if sig.kind == KIND_LONG_TERM:
        return PromoteDecision(sig.path, False, (), "already long-term memory", numbers=numbers)
    if promoted:
        why = "promoted before; not nominated again"
        return PromoteDecision(sig.path, False, (), why, numbers=numbers)
    rules = nomination_rules(sig, cfg, marked=marked, mark_note=mark_note)
    if not rules:
        return PromoteDecision(
            sig.path,
            False,
            (),
            f"{sig.hits_7d} hits in 7 days, {sig.hits_14d} in 14, {sig.hits_total} in total: "
            f"below {cfg.hits_7d} / {cfg.hits_14d} / {cfg.hits_total}",
            numbers=numbers,
        )
    category, why = classify(text)
    return PromoteDecision(
        sig.path, True, tuple(rules), "; ".join(rules), category, why, sig.queries[:10], numbers
    )
