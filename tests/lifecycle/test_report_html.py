"""The reflect page's HTML: any text from the user's notes shows as that text and never
becomes markup (a file name, a heading, a journal path or reason, whatever it holds), and the
page asks for nothing from anywhere (no script, no link, no remote anything)."""

from __future__ import annotations

import html.parser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.report_html import (
    BarSection,
    Budget,
    BudgetFile,
    Entry,
    Heatmap,
    HeatRow,
    Page,
    Restored,
    RunView,
    level,
    render_page,
)

pytestmark = pytest.mark.unit

ALLOWED = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "h4", "p",
           "span", "code", "section", "div", "table", "thead", "tbody", "tr", "th", "td", "i",
           "ul", "li", "svg", "rect", "article"}  # fmt: skip
HOSTILE = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "'; background:url(http://evil/)",
    "</style><link rel=stylesheet href=http://evil/x.css>",
    "&amp; &lt;b&gt; ]]> <!-- -->",
    "<svg onload=alert(1)>",
]


class _Parts(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str]] = []
        self.text: list[str] = []
        self._style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += [(k, v or "") for k, v in attrs]
        self._style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._style = False

    def handle_data(self, data: str) -> None:
        if not self._style:
            self.text.append(data)


def _page(name: str) -> Page:
    weeks = ("2026-11-16", "2026-11-23")
    heat = Heatmap("files", "Use per file", "caption", weeks,
                   (HeatRow(name, (1, 3), note=name), HeatRow("memory/a.md", (0, 0))), more=name)
    budget = Budget(20_000, 60_000, "OpenClaw 2026.9.6",
                    (BudgetFile("AGENTS.md", 100, 100, 0, 100, True),
                     BudgetFile("MEMORY.md", 30_000, 14_000, 5_000, 19_500, True)),
                    BudgetFile("MEMORY.md", 30_000, 14_000, 5_000, 19_500, True),
                    (BarSection(name, 0, 10_000, "loaded", 3),
                     BarSection(name, 10_000, 20_000, "cut", 0),
                     BarSection("## B", 20_000, 30_000, "partly cut", 1)))
    runs = (RunView(name, name, (Entry(name, name, name, name, name),),
                    (Restored(name, name, name),)),)
    return Page(name, name, name, (heat,), budget, runs, name, ((name, name, name),))  # fmt: skip


def _parts(page: Page) -> _Parts:
    out = _Parts()
    out.feed(render_page(page))
    return out


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_name_shows_as_its_text_everywhere_and_adds_no_markup(name: str) -> None:
    parts = _parts(_page(name))
    assert set(parts.tags) <= ALLOWED
    assert not [k for k, _ in parts.attrs if k.startswith("on") or k in ("src", "href")]
    text = "".join(parts.text)
    assert text.count(name) >= 8  # the label, the note, the runs' fields: as typed
    # the same page for a plain name has the same elements, in the same order
    assert parts.tags == _parts(_page("memory/plain.md")).tags


@settings(max_examples=150, deadline=None)
@given(st.text(min_size=1, max_size=40))
def test_any_text_in_any_field_leaves_the_elements_as_they_are(name: str) -> None:
    parts = _parts(_page(name))
    assert parts.tags == _parts(_page("x")).tags
    assert {k for k, _ in parts.attrs} == {k for k, _ in _parts(_page("x")).attrs}


def test_the_page_loads_nothing_from_anywhere() -> None:
    page = render_page(_page("memory/a.md"))
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    for needle in ("<script", "<link", "http://", "https://", "url(", "@import", "<img"):
        assert needle not in page.lower()


def test_heat_levels_rise_with_the_count_up_to_the_busiest_cell() -> None:
    assert [level(n, 8) for n in (0, 1, 2, 3, 4, 5, 6, 7, 8)] == [0, 1, 1, 2, 2, 3, 3, 4, 4]
    assert level(1, 1) == 4 and level(0, 0) == 0 and level(3, 0) == 0


def test_a_name_that_is_no_valid_unicode_is_written_not_a_crash(tmp_path) -> None:
    """A path from a transcript may hold a lone surrogate (JSON allows ``\\udc80``)."""
    from memoryd.report_page import write_page

    path = write_page(tmp_path, "reflect-2026-11-30", _page("memory/\udc80bad.md"))
    text = path.read_text(encoding="utf-8")
    assert "memory/?bad.md" in text and text.rstrip().endswith("</html>")
