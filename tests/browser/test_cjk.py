"""Chinese is drawn with a Chinese font, not boxes: the browser's DevTools protocol says
which platform fonts drew each node's text, and how many glyphs each drew.

The figures' Chinese labels are checked where matplotlib draws them
(tests/exercises/mha/test_lesson.py: no missing glyph, a font that has them)."""

import re
import shutil

import pytest

from tests.mha_exercise import plots

from .conftest import REPO, screenshot
from .notebook_page import PANEL, NotebookPage, cell_indexes

CJK_FAMILIES = plots.CJK_FAMILIES
pytestmark = [pytest.mark.browser, pytest.mark.slow]

HAN = re.compile(r"[\u4e00-\u9fff]")


def is_cjk_family(name):
    return name in CJK_FAMILIES or "CJK" in name or "WenQuanYi" in name


def platform_fonts(page, selector):
    """[(family, glyphs drawn)] for the text inside the first node that matches."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
    assert node, f"nothing matches {selector}"
    fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
    cdp.detach()
    return [(font["familyName"], font["glyphCount"]) for font in fonts]


def assert_drawn_in_a_cjk_font(page, selector):
    han = len(HAN.findall(page.locator(selector).first.inner_text()))
    assert han > 0, f"{selector} holds no Chinese to check"
    fonts = platform_fonts(page, selector)
    cjk_glyphs = sum(glyphs for family, glyphs in fonts if is_cjk_family(family))
    # Every Han character needs a glyph from a CJK font; Latin may come from another.
    assert cjk_glyphs >= han, (selector, han, fonts)


def test_chinese_headings_and_the_selfcheck_table_use_a_cjk_font(page, lab):
    folder = lab.root / "students" / "cjk"
    shutil.copytree(REPO / "assignments" / "mha", folder)
    ids, _ = cell_indexes(folder / "mha.ipynb")
    notebook = NotebookPage(page, lab, folder / "mha.ipynb")
    notebook.open()
    notebook.run_all()

    assert_drawn_in_a_cjk_font(page, f"{PANEL} .jp-MarkdownOutput h1")
    table = f'{PANEL} .jp-Cell[data-windowed-list-index="{ids["selfcheck_all"]}"] .jp-OutputArea-output pre'
    assert_drawn_in_a_cjk_font(page, table)
    notebook.cell(ids["selfcheck_all"]).scroll_into_view_if_needed()
    screenshot(page, "cjk-selfcheck-table")
