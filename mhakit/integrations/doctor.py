"""``mhakit doctor``: a course as it stands, one line per thing that a grading run, a
release or a student's fetch and submit depend on.

Each line is ok, a note, or names the fix. The doctor only reads: it changes no file, no
gradebook and no exchange. It exits non-zero when something would break the course's run.
"""

import stat
from dataclasses import dataclass
from pathlib import Path

# nbgrader's own default, used when no config sets c.Exchange.root.
DEFAULT_EXCHANGE = "/usr/local/share/nbgrader/exchange"
# What the course's nbgrader_config.py must keep for the kit's doors to be the ones in force.
KIT_SETTINGS = {
    ("Autograde", "exporter_class"):
        "mhakit.integrations.nbgrader_plugin.BoundedNotebookReader",
    ("ExchangeFactory", "collect"): "mhakit.integrations.collect.CheckedCollect",
    ("ExportApp", "plugin_class"): "mhakit.integrations.export.ExerciseExport",
}
ISOLATED = "mhakit.integrations.nbgrader_plugin.IsolatedAutograde"


@dataclass(frozen=True)
class Finding:
    topic: str
    line: str
    ok: bool = True
    breaks: bool = False  # the course's run would fail: the doctor exits non-zero
    note: bool = False    # true, and worth knowing, but nothing to fix

    def shown(self):
        mark = "ok  " if self.ok and not self.note else "note" if self.ok else "FIX "
        return f"{mark} {self.topic}: {self.line}"


@dataclass(frozen=True)
class Config:
    """The nbgrader settings in force for one reader, and the files they came from."""
    values: dict
    files: list

    def get(self, section, key, default=None):
        return self.values.get(section, {}).get(key, default)


def config_dirs():
    """Where nbgrader looks for nbgrader_config.py, weakest first, and which of those
    the course's students read as well (not the instructor's own, nor a private venv)."""
    from jupyter_core.paths import jupyter_config_dir, jupyter_config_path

    strongest_first = jupyter_config_path()
    mine = {Path(jupyter_config_dir()).resolve(), Path.home().resolve()}
    shared = [folder for folder in strongest_first
              if not any(Path(folder).resolve().is_relative_to(own) for own in mine)]
    return list(reversed(strongest_first)), list(reversed(shared))


def load_config(folders):
    """The merged nbgrader config of ``folders`` (weakest first), as nbgrader merges it."""
    from traitlets.config.loader import Config as Merged
    from traitlets.config.loader import PyFileConfigLoader

    merged, files = Merged(), []
    for folder in folders:
        path = Path(folder) / "nbgrader_config.py"
        if path.is_file():
            try:
                merged.merge(PyFileConfigLoader(path.name, path=str(path.parent)).load_config())
            except Exception as error:  # noqa: BLE001 - whatever the file raises: nbgrader stops too
                raise ValueError(f"{path}: {type(error).__name__}: {error}") from None
            files.append(str(path))
    values = {section: dict(merged[section]) for section in merged
              if isinstance(merged[section], Merged)}
    return Config(values=values, files=files)


def findings(course, exercise, *, humans=None):
    """Every check's finding for the course folder ``course``: its assignments of
    ``exercise`` and of every other exercise of the course that it holds a source of."""
    from ..exercise import course_exercises
    from .privacy import other_humans

    course = Path(course).resolve()
    humans = other_humans() if humans is None else humans
    instructor_dirs, student_dirs = config_dirs()
    try:
        mine = load_config([*instructor_dirs, course])
        theirs = load_config(student_dirs)
    except ValueError as error:
        return [Finding("config", f"a config does not load ({error}): fix it", ok=False,
                        breaks=True)]
    exchange = Path(mine.get("Exchange", "root", DEFAULT_EXCHANGE))
    # Without a course_id in the config, students name the course: `--course mha-kit`.
    course_id = mine.get("CourseDirectory", "course_id", "") or "mha-kit"
    built = {}  # {exercise: its assignments with a source here}, the command's own first
    for each in [exercise, *course_exercises()]:
        names = [name for name in each.assignments if (course / "source" / name).is_dir()]
        if each is exercise or names:
            built.setdefault(each, names)
    assignments = [name for names in built.values() for name in names]
    return [config_finding(course, mine), *exchange_findings(exchange, course_id, humans),
            students_finding(exchange, theirs, humans, course), privacy_finding(course),
            confinement_finding(), *gradebook_findings(course, mine, assignments),
            *[finding for each, names in built.items()
              for finding in release_findings(course, each, names, exchange / course_id)],
            totals_finding({name: each.total for each, names in built.items() for name in names})]


def config_finding(course, config):
    """The files in force, and whether they keep the kit's doors."""
    if not (course / "nbgrader_config.py").is_file():
        return Finding("config", f"{course} has no nbgrader_config.py: run the doctor in the "
                       "course folder (a clone of mha-kit)", ok=False, breaks=True)
    lost = [f"c.{section}.{key}" for (section, key), value in KIT_SETTINGS.items()
            if _renamed(config.get(section, key)) != value]
    if ISOLATED not in map(_renamed, config.get("Autograde", "autograde_preprocessors", [])):
        lost.insert(0, "c.Autograde.autograde_preprocessors (nbgrader would run student "
                       "code in a kernel)")
    root = config.get("CourseDirectory", "root")
    if root and Path(root).resolve() != course:
        lost.append(f"c.CourseDirectory.root is {root}, not this course")
    read = ", ".join(config.files)
    if lost:
        return Finding("config", f"nbgrader reads {read}; these no longer say what the kit's "
                       f"nbgrader_config.py says: {', '.join(lost)}", ok=False, breaks=True)
    old = _old_names(config)
    if old:
        return Finding("config", f"nbgrader reads {read}; the kit's doors are in force, but "
                       f"{', '.join(old)} name the kit by its old package, autograder, which "
                       "a later version drops: write mhakit. where they say autograder.",
                       ok=False)
    return Finding("config", f"nbgrader reads {read}; the kit's doors are in force")


OLD_PACKAGE = "autograder."  # the kit's name before mhakit; see autograder/__init__.py


def _renamed(value):
    """A class path of the config as the kit names it now."""
    if isinstance(value, str) and value.startswith(OLD_PACKAGE):
        return "mhakit." + value.removeprefix(OLD_PACKAGE)
    return value


def _old_names(config):
    """The kit's settings that still name a class by the old package."""
    found = [f"c.{section}.{key}" for section, key in KIT_SETTINGS
             if _renamed(config.get(section, key)) != config.get(section, key)]
    if any(_renamed(v) != v for v in config.get("Autograde", "autograde_preprocessors", [])):
        found.insert(0, "c.Autograde.autograde_preprocessors")
    return found


def for_others(topic, line, humans):
    """A problem only for other people's accounts: a fix where there are some, else a
    note (alone on a laptop, the instructor plays the students)."""
    if humans:
        return Finding(topic, line, ok=False, breaks=True)
    return Finding(topic, f"{line} (no other account here yet)", note=True)


def mode_of(path):
    return stat.filemode(path.stat().st_mode)


def exchange_findings(root, course_id, humans):
    """Where the exchange is, and whether every account can reach and use it as nbgrader
    means it to (the root 0777; a course's outbound readable, its inbound writable)."""
    if not root.is_dir():
        return [Finding("exchange", f"{root} does not exist: `mkdir -p {root} && chmod 777 "
                        f"{root}` (as root where needed), or set c.Exchange.root",
                        ok=False, breaks=True)]
    closed = [folder for folder in [*reversed(root.parents), root]
              if not folder.stat().st_mode & stat.S_IXOTH]
    if closed:
        return [for_others("exchange", f"other accounts cannot reach {root}: {closed[0]} "
                           f"is {mode_of(closed[0])}; `chmod o+x {closed[0]}`", humans)]
    if root.stat().st_mode & 0o777 != 0o777:
        return [for_others("exchange", f"{root} is {mode_of(root)}, so students cannot "
                           f"fetch and submit: `chmod 777 {root}`, as nbgrader makes it",
                           humans)]
    return [Finding("exchange", f"{root} ({mode_of(root)})"),
            *exchange_course_findings(root / course_id, humans)]


def exchange_course_findings(folder, humans):
    if not folder.is_dir():
        return [Finding("exchange", f"nothing released to {folder} yet", note=True)]
    wanted = {"outbound": (stat.S_IROTH | stat.S_IXOTH, "o+rx"),
              "inbound": (stat.S_IWOTH | stat.S_IXOTH, "o+wx")}
    found = []
    for name, (bits, fix) in wanted.items():
        path = folder / name
        if path.is_dir() and path.stat().st_mode & bits != bits:
            found.append(for_others("exchange", f"{path} is {mode_of(path)}: `chmod {fix} "
                                    f"{path}`", humans))
        elif path.is_dir():
            found.append(Finding("exchange", f"{path} ({mode_of(path)})"))
    return found


def students_finding(root, theirs, humans, course):
    """Whether the students' nbgrader, which reads only the shared config, finds the same
    exchange as the instructor's."""
    seen = Path(theirs.get("Exchange", "root", DEFAULT_EXCHANGE)).resolve()
    inside = root.resolve().is_relative_to(course) or root.resolve().is_relative_to(Path.home())
    if seen == root.resolve() and not inside:
        where = ", ".join(theirs.files) or "nbgrader's default"
        return Finding("students", f"their nbgrader finds the same exchange ({where})")
    if inside:
        return for_others("students", f"the exchange {root} is inside your own folders, "
                          "which students cannot enter: choose a shared one such as "
                          "/srv/nbgrader/exchange", humans)
    return for_others("students", f"their nbgrader reads only the shared config, which "
                      f"points at {seen}: set c.Exchange.root = '{root}' in "
                      "/etc/jupyter/nbgrader_config.py", humans)


def privacy_finding(course):
    from .privacy import course_exposure

    exposure = course_exposure(course)
    if exposure is None:
        return Finding("privacy", "no other account can read the course or the kit's answers")
    return Finding("privacy", exposure.line, ok=False, breaks=exposure.refuses)


def confinement_finding():
    from ..sandbox import confinement
    from ..sandbox.limits import Limits
    from .gate import confinement_refusal

    refused = confinement_refusal()
    if refused:
        return Finding("confinement", refused, ok=False, breaks=True)
    mode = confinement.chosen_mode(Limits())
    taken = confinement.choice(Limits())
    tried = (taken.probed.get(mode) or {}).get("tried") or []
    said = f"; its probe child was refused {', '.join(tried)}" if tried else ""
    weaker = "; ".join(dict.fromkeys(taken.problems))
    return Finding("confinement", f"student code runs in the {mode} mode{said}"
                   + (f" (not stronger: {weaker})" if weaker else ""))


def gradebook_findings(course, config, assignments):
    from .gate import BUILD_FIRST, missing_from_gradebook

    if not assignments:
        return [Finding("gradebook", f"no assignment of the exercise in {course / 'source'}: "
                        f"{BUILD_FIRST}", ok=False, breaks=True)]
    db_url = config.get("CourseDirectory", "db_url") or f"sqlite:///{course / 'gradebook.db'}"
    missing = [line for line in (missing_from_gradebook(db_url, name) for name in assignments)
               if line]
    if missing:
        return [Finding("gradebook", missing[0], ok=False, breaks=True)]
    return [Finding("gradebook", f"{db_url.removeprefix('sqlite:///')} holds "
                    f"{' and '.join(assignments)}")]


def release_findings(course, exercise, assignments, exchange_course):
    found = []
    for name in assignments:
        stale = stale_part(course, exercise, name, exchange_course)
        released = (exchange_course / "outbound" / name).is_dir()
        fresh = (f"{name}: source and release are fresh, and the exchange holds this release"
                 if released else f"{name}: source and release are fresh, not yet released "
                 f"to the exchange (`nbgrader release_assignment {name}`)")
        found.append(Finding("release", f"{name}: {stale}", ok=False, breaks=True) if stale
                     else Finding("release", fresh))
    return found


def stale_part(course, exercise, assignment, exchange_course):
    """What is older than what it is made from, and the command that renews it, or None."""
    from ..authoring.build import source_files

    source, release = course / "source" / assignment, course / "assignments" / assignment
    differ = [name for name, text in source_files(exercise, assignment).items()
              if not (source / name).is_file()
              or (source / name).read_text(encoding="utf-8") != text]
    if differ:
        return (f"source/{assignment} differs from a fresh build of the exercise "
                f"({differ[0]}): `mhakit build`")
    notebook = exercise.notebook
    if not (release / notebook).is_file() or (
            (release / notebook).stat().st_mtime < (source / notebook).stat().st_mtime):
        return f"assignments/{assignment} is older than its source: `mhakit build`"
    outbound = exchange_course / "outbound" / assignment / notebook
    if outbound.is_file() and outbound.read_bytes() != (release / notebook).read_bytes():
        return (f"the exchange holds an older release: `nbgrader release_assignment "
                f"{assignment} --force`")
    return None


def totals_finding(totals):
    """formgrader's student totals add up every assignment in the gradebook; nbgrader has
    no setting that changes it. ``totals``: {assignment: its exercise's total}."""
    if len(totals) < 2:
        out_of = f"{sum(totals.values()):g}" if totals else "the exercise's total"
        return Finding("formgrader", f"one assignment: formgrader shows students out of {out_of}")
    return Finding("formgrader", f"formgrader's Manage Students adds up {' and '.join(totals)}"
                   f", so each student reads out of {sum(totals.values()):g} there though "
                   "they take one language of each exercise; a student's own page and "
                   "`nbgrader export` give each exercise out of its own total. A course in "
                   "one language: `mhakit build --language zh` (or en) and no other", note=True)


def run(course, exercise, out=print):
    """Print every finding; 1 when one would break the course's run, else 0."""
    results = findings(course, exercise)
    for finding in results:
        out(finding.shown())
    broken = [finding.topic for finding in results if finding.breaks]
    out(f"{len(broken)} problem(s) would break the course: {', '.join(broken)}" if broken
        else "nothing here would break a grading run")
    return 1 if broken else 0
