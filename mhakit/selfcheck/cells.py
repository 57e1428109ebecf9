"""A cell's nbgrader metadata, read defensively: the one place the kit reads it.

A notebook is the student's file, so a cell's metadata may be anything (a list, a
string, a grade id that is a number). Every reader goes through here and gets a dict.
"""

FLAGS = ("grade", "solution", "locked")


def nbgrader_meta(cell):
    """A cell's nbgrader metadata as a dict ({} when it has none, or none that is a dict)."""
    meta = cell.get("metadata") if isinstance(cell, dict) else None
    meta = meta.get("nbgrader") if isinstance(meta, dict) else None
    return meta if isinstance(meta, dict) else {}


def has_nbgrader_entry(cell):
    """Whether the cell's metadata has an "nbgrader" entry at all, valid or not."""
    meta = cell.get("metadata") if isinstance(cell, dict) else None
    return isinstance(meta, dict) and "nbgrader" in meta


def valid_meta(cell):
    """The cell's nbgrader metadata when nbgrader would accept it (schema 3), else {}."""
    meta = nbgrader_meta(cell)
    return meta if meta.get("schema_version") == 3 and "grade_id" in meta else {}


def grade_id_of(cell):
    """The cell's grade id, or None (also for an id that is not text, which nbgrader's
    schema refuses: a list there would not even serve as a key)."""
    grade_id = nbgrader_meta(cell).get("grade_id")
    return grade_id if isinstance(grade_id, str) else None


def carries(cell, *flags):
    """Whether any of ``flags`` ("grade", "solution", "task", "locked") is set on the cell."""
    meta = nbgrader_meta(cell)
    return any(meta.get(flag) for flag in flags)


def source_text(source):
    """A cell's source as one string (nbformat allows a list of lines)."""
    return "".join(map(str, source)) if isinstance(source, list) else str(source)


def normal_source(source):
    """A source compared loosely: blank lines and trailing spaces do not count."""
    return "\n".join(line.rstrip() for line in source_text(source).splitlines()
                     if line.strip())


def in_nbformat_shape(notebook):
    """A copy of ``notebook`` in the shape nbformat's readers and nbgrader expect,
    whatever the student saved: object metadata, cells that are objects with object
    metadata and text sources, code cells with a list of outputs. Only shapes change, so
    what is graded reads the same as in the file."""
    shaped = dict(notebook)
    shaped["metadata"] = notebook.get("metadata") if isinstance(notebook.get("metadata"),
                                                                dict) else {}
    shaped.setdefault("nbformat", 4)
    shaped.setdefault("nbformat_minor", 5)
    cells = notebook.get("cells") if isinstance(notebook.get("cells"), list) else []
    shaped["cells"] = [_cell_in_shape(cell) for cell in cells if isinstance(cell, dict)]
    return shaped


def _cell_in_shape(cell):
    cell = dict(cell)
    if not isinstance(cell.get("metadata"), dict):
        cell["metadata"] = {}
    cell["source"] = source_text(cell.get("source", ""))
    if cell.get("cell_type") not in ("code", "markdown", "raw"):
        cell["cell_type"] = "raw"
    if cell["cell_type"] == "code":
        if not isinstance(cell.get("outputs"), list):
            cell["outputs"] = []
        cell.setdefault("execution_count", None)
    return cell
