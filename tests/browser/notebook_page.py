"""A notebook open in JupyterLab, driven the way a student drives it.

Cells are found by their index in the saved notebook (every cell stays in the page: the
server's settings turn virtual scrolling off). Text goes in through the keyboard, and
results are read from the rendered page.
"""

import re

import nbformat

PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"
WIDGET = "window.jupyterapp.shell.currentWidget"
# A row's state is the first English state word after the function's name: the Chinese
# release writes "通过 passed", "未通过 failed", "未实现 not yet implemented", and for the
# quiz, whose key is not shipped, "已作答 answered".
STATE = re.compile(r"\b(passed|failed|not yet implemented|not run yet|not defined|answered)\b")


def cell_indexes(path):
    """{grade id: index} for the saved notebook, plus the sources, in cell order."""
    notebook = nbformat.read(str(path), as_version=4)
    ids = {cell.metadata.get("nbgrader", {}).get("grade_id"): i
           for i, cell in enumerate(notebook.cells)}
    return ids, [cell.source for cell in notebook.cells]


def table_rows(text):
    """{function: state} from the self-check's plain-text table."""
    rows = {}
    for line in text.splitlines():
        name = re.match(r"(\w+)\s", line)
        state = STATE.search(line)
        if name and state and name.group(1) not in rows:
            rows[name.group(1)] = state.group(1)
    return rows


class NotebookPage:
    def __init__(self, page, lab, path):
        self.page, self.lab, self.path = page, lab, path

    def open(self):
        relative = self.path.relative_to(self.lab.root).as_posix()
        self.page.goto(self.lab.url(f"/lab/tree/{relative}"))
        self.page.locator(f"{PANEL} .jp-Notebook .jp-Cell").first.wait_for()
        self.page.wait_for_function(f"{WIDGET} && {WIDGET}.context !== undefined")
        self.page.evaluate(f"async () => {{ await {WIDGET}.context.ready; "
                           f"await {WIDGET}.sessionContext.ready; }}")
        self.wait_until_idle()

    def wait_until_idle(self):
        self.page.wait_for_function(
            f"{WIDGET}.sessionContext.session?.kernel?.status === 'idle'")

    def cell(self, index):
        return self.page.locator(f'{PANEL} .jp-Cell[data-windowed-list-index="{index}"]')

    def prompts(self):
        return self.page.locator(f"{PANEL} .jp-InputPrompt").all_inner_texts()

    def _latest_count(self):
        counts = [int(n) for p in self.prompts() for n in re.findall(r"\[(\d+)\]", p)]
        return max(counts, default=0)

    def run_all(self):
        """Run All; wait until every code cell shows a count newer than any before it
        (no [*] left, none skipped) and the kernel is idle."""
        before = self._latest_count()
        assert self.page.evaluate(
            "async () => await window.jupyterapp.commands.execute('runmenu:run-all')")
        self.page.wait_for_function(
            f"""before => [...document.querySelectorAll('{PANEL} .jp-CodeCell .jp-InputPrompt')]
                .every(p => {{ const m = /\\[(\\d+)\\]/.exec(p.textContent);
                               return m !== null && Number(m[1]) > before; }})""", arg=before)
        self.wait_until_idle()

    def _count(self, index):
        found = re.search(r"\d+", self.cell(index).locator(".jp-InputPrompt").inner_text())
        return int(found.group()) if found else 0

    def run_cell(self, index):
        """Select the cell by its prompt and press Ctrl+Enter; wait for a new count."""
        before = self._count(index)
        self.cell(index).locator(".jp-InputPrompt").click()
        self.page.keyboard.press("Control+Enter")
        prompt = self.cell(index).locator(".jp-InputPrompt").element_handle()
        self.page.wait_for_function(
            "([p, before]) => { const m = /\\[(\\d+)\\]/.exec(p.textContent);"
            " return m !== null && Number(m[1]) > before; }", arg=[prompt, before])
        self.wait_until_idle()

    def source(self, index):
        return self.page.evaluate(
            f"i => {WIDGET}.content.widgets[i].model.sharedModel.getSource()", index)

    def type_code(self, index, text):
        """Replace a code cell's text as a student would: click, select all, type."""
        self.cell(index).locator(".cm-content").click()
        self.page.keyboard.press("Control+a")
        self.page.keyboard.insert_text(text)  # no auto-indent or bracket closing
        assert self.source(index) == text

    def type_markdown(self, index, text):
        """Open a rendered markdown cell for editing, replace its text and render it."""
        self.cell(index).dblclick()
        self.type_code(index, text)
        self.page.keyboard.press("Shift+Enter")

    def outputs(self, index):
        return "\n".join(self.cell(index).locator(".jp-OutputArea-output").all_inner_texts())

    def all_outputs(self):
        return "\n".join(self.page.locator(f"{PANEL} .jp-OutputArea-output").all_inner_texts())

    def error_outputs(self):
        return self.page.locator(
            f'{PANEL} .jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')

    def images(self, index):
        """The decoded images in a cell's outputs (naturalWidth is 0 for a broken one)."""
        return self.cell(index).locator(".jp-OutputArea-output img").evaluate_all(
            "imgs => imgs.map(i => i.naturalWidth)")

    def save(self):
        self.page.keyboard.press("Control+s")
        self.page.wait_for_function(f"!{WIDGET}.context.model.dirty")

    def validate(self):
        """Press nbgrader's Validate button; return the results dialog."""
        self.page.locator(f"{PANEL} .jp-NotebookPanel-toolbar").get_by_text(
            "Validate", exact=True).click()
        return self.page.locator(".jp-Dialog #validation-message")
