"""mhakit: the instructor's command line."""

import argparse
import json
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from ..lean_imports import leave_out_costly_format_checks

leave_out_costly_format_checks()  # before anything imports jsonschema: see lean_imports.py

if TYPE_CHECKING:  # the grader is imported only by the commands that grade
    from ..grader.result import Result


DEFAULT_OUT = "mhakit-results"


def _grade(args):
    paths = [Path(p) for p in args.paths]
    if not args.dask and all(path.is_dir() for path in paths):
        _head_start(args)
    problem = _problem_before_grading(paths, args)
    if problem:
        print(f"mhakit grade: {problem}", file=sys.stderr)
        return 2
    if len(paths) == 1 and paths[0].is_file():
        return _grade_one(paths[0], args)
    return _grade_folders(paths, args)


def _head_start(args):
    """A class run's slow starts, begun before the checks that precede grading (whose
    probe child leaves this process waiting): the workers' forkserver and, for
    --gradebook, nbgrader's imports. A run that is then refused has written nothing; it
    ends when those imports have."""
    from .workers import start_forkserver

    start_forkserver()
    if args.gradebook is not None:
        from .gradebook import import_nbgrader_meanwhile
        import_nbgrader_meanwhile()


def _problem_before_grading(paths, args):
    """Why nothing may be graded, in one line, or None. Checked before any work: a class
    graded for an hour must not fail at its first write."""
    from .gate import refusal_before_grading

    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        return f"no such file or folder: {', '.join(missing)}"
    one_notebook = len(paths) == 1 and paths[0].is_file()
    unused = folder_options(args) if one_notebook else []
    if unused:
        return (f"{', '.join(unused)}: for folders of submissions; one notebook's result "
                "is printed as JSON on stdout, and nothing is written")
    refused = refusal_before_grading(allow_unconfined=args.allow_unconfined,
                                     allow_shared=args.allow_shared, course=args.gradebook,
                                     warn=_warn)
    if refused:
        return refused
    if args.gradebook is not None:  # one notebook too: its grade would go nowhere
        from .gradebook import check_submitted_folder
        try:
            for path in paths:
                check_submitted_folder(path, args.gradebook)
        except ValueError as error:
            return str(error)
    if one_notebook:
        return None  # its result goes to stdout, nothing is written
    files = [str(path) for path in paths if path.is_file()]
    if files:
        return f"give either one notebook or folders, not {files[0]} among several"
    return unwritable_folder(args.out or DEFAULT_OUT)


def folder_options(args):
    """The options given that only a folder's run uses: where its files go and how its
    students are spread over processes. For one notebook they would do nothing."""
    given = {"--out": args.out is not None, "--jobs": args.jobs is not None,
             "--dask": args.dask is not None, "--fresh": args.fresh}
    return [option for option, present in given.items() if present]


def _warn(message, *values):
    print(message % values, file=sys.stderr)


def _grade_one(path, args):
    """The result as JSON on stdout; exit 1 when the notebook could not be graded. Graded
    against --exercise when given, else against the exercise ``for_notebook`` finds."""
    from ..exercise import current, for_notebook
    from ..grader.grading import grade_notebook

    if path.suffix != ".ipynb":
        print(f"mhakit grade: {path} is not a notebook (.ipynb); give a notebook or a "
              "folder of submissions", file=sys.stderr)
        return 2
    exercise = current() if args.exercise else for_notebook(path)
    result = grade_notebook(path, seed=args.seed, language=args.language, exercise=exercise)
    print(json.dumps(result.as_json(), indent=1, ensure_ascii=False))
    if ungraded_reason(result):
        print(f"mhakit grade: {path} could not be graded ({ungraded_reason(result)})",
              file=sys.stderr)
        return 1
    return 0


def _grade_folders(paths, args):
    from ..exercise import current
    from .batch import exercise_of, grade_folder, grade_table, wide_console
    from .report import score_histogram, text_histogram

    results, exercise, out = {}, None, args.out or DEFAULT_OUT
    for path in paths:
        try:
            # --exercise when given; else the exercise whose assignments the folder holds.
            chosen = current() if args.exercise else exercise_of(path)
            if exercise is not None and chosen is not exercise:
                raise ValueError(f"{path} holds submissions of {chosen.name}, an earlier folder "
                                 f"of {exercise.name}: grade each exercise in a run of its own")
            exercise = chosen
            results.update(grade_folder(path, out, seed=args.seed, jobs=args.jobs,
                                        quiet=args.quiet, fresh=args.fresh, dask=args.dask,
                                        gradebook=args.gradebook, language=args.language,
                                        exercise=exercise))
        except ValueError as error:
            print(f"mhakit grade: {error}", file=sys.stderr)
            return 2
    if args.json:
        print(json.dumps({student: result.as_json() for student, result in results.items()},
                         indent=1, ensure_ascii=False))
    elif not args.quiet:
        wide_console().print(grade_table(results, exercise))
    if not args.quiet:
        print(text_histogram(score_histogram(results, exercise.total)), file=sys.stderr)
    print(f"wrote {out}/<student>/results.json, {out}/grades.csv and {out}/report.md",
          file=sys.stderr)
    ungraded = ungraded_line(results)
    if ungraded:
        print(ungraded, file=sys.stderr)
    return 0


def unwritable_folder(out):
    """Why the folder ``out`` cannot hold results, in one line; None when it can. Creates
    it, and writes and removes a probe file in it."""
    try:
        Path(out).mkdir(parents=True, exist_ok=True)
        handle, probe = tempfile.mkstemp(dir=out, prefix=".mhakit-probe-")
        os.close(handle)
        os.unlink(probe)
    except OSError as error:
        return (f"cannot write the results in {out} ({error.strerror or error}); "
                "choose another --out")
    return None


def ungraded_reason(result: "Result") -> str | None:
    """Why a result is not a grade (its status and reason, on one line); None for a grade."""
    from ..grader.result import Status
    from ..selfcheck.notebook_file import one_line

    if result.status is Status.GRADED:
        return None
    return one_line(f"{result.status.value}: {result.extra.get('error') or '?'}", 80)


SHOWN_UNGRADED = 3


def ungraded_line(results):
    """One line naming the students who got no grade, or None when all did."""
    reasons = {student: reason for student, result in results.items()
               if (reason := ungraded_reason(result))}
    if not reasons:
        return None
    shown = [f"{student} ({reason})" for student, reason in
             list(reasons.items())[:SHOWN_UNGRADED]]
    more = len(reasons) - len(shown)
    tail = f" and {more} more (see grades.csv)" if more else ""
    return f"{len(reasons)} could not be graded: {', '.join(shown)}{tail}"


def _build(args):
    from ..authoring.build import generate_release, write_exercise_files, write_source
    from ..exercise import current

    exercise = current()
    if args.exercise_files:
        for path in write_exercise_files(exercise):
            print(f"wrote {path}", file=sys.stderr)
        return 0
    course = Path(args.course)
    if not (course / "nbgrader_config.py").exists():
        print(f"mhakit build: {course} has no nbgrader_config.py; is it the course folder?",
              file=sys.stderr)
        return 2
    chosen = [name for name, lang in exercise.assignments.items()
              if args.language in (None, lang)]
    for folder in write_source(exercise, course, chosen):
        print(f"wrote {folder}", file=sys.stderr)
        if not args.source_only:
            print(f"wrote {generate_release(course, folder.name)}", file=sys.stderr)
    return 0


def _doctor(args):
    from ..exercise import current
    from .doctor import run

    course = Path(args.course)
    if not course.is_dir():
        print(f"mhakit doctor: {course} is not a folder", file=sys.stderr)
        return 2
    return run(course, current())


def _gradescope(args):
    from .gradescope import build_zip

    try:
        print(f"wrote {build_zip(args.out)}", file=sys.stderr)
    except ValueError as error:
        print(f"mhakit gradescope: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # found only while writing: a full disk, a read-only mount
        print(f"mhakit gradescope: cannot write {args.out}: {error.strerror or error}",
              file=sys.stderr)
        return 2
    return 0


def _demo(args):
    from .demo import main as demo
    return demo(keep=args.keep, seed=args.seed)


def parser():
    from ..selfcheck.wording import LANGUAGES

    top = argparse.ArgumentParser(prog="mhakit", description=__doc__)
    top.add_argument("--verbose", "-v", action="store_true",
                     help="also say, on stderr, how the confinement of student code was "
                          "chosen and why stronger modes were not used")
    top.add_argument("--exercise", metavar="FOLDER",
                     help="the exercise to build or grade (default: the kit's own; also "
                          "MHAKIT_EXERCISE)")
    commands = top.add_subparsers(dest="command", required=True)

    grade = commands.add_parser("grade", help="grade one notebook (JSON on stdout) or folders")
    grade.add_argument("paths", nargs="+", help="a notebook, or folders of submissions")
    grade.add_argument("--out", help=f"where folder results go (default: {DEFAULT_OUT})")
    grade.add_argument("--seed", type=int, help="seed for the hidden inputs (default: fresh)")
    grade.add_argument("--jobs", type=positive_count,
                       help="parallel submissions (default: all cores)")
    grade.add_argument("--quiet", action="store_true", help="no progress bar, no table")
    grade.add_argument("--language", choices=LANGUAGES,
                       help="the feedback's language (default: each notebook's own)")
    grade.add_argument("--json", action="store_true", help="all results as JSON on stdout")
    grade.add_argument("--dask", metavar="ADDRESS",
                       help="grade on a Dask cluster, e.g. tcp://scheduler:8786")
    grade.add_argument("--fresh", action="store_true",
                       help="regrade everything, even results that still hold")
    grade.add_argument("--allow-unconfined", action="store_true",
                       help="grade even where nothing can hide the course from student code "
                            "(every result is then flagged)")
    grade.add_argument("--allow-shared", action="store_true",
                       help="grade even where other people's accounts can read the course "
                            "or the kit's answers")
    grade.add_argument("--gradebook", metavar="COURSE",
                       help="also write the grades into this nbgrader course's gradebook "
                            "and autograded/ folder, as nbgrader autograde does")
    grade.set_defaults(run=_grade, parser=grade)

    build = commands.add_parser("build", help="regenerate source/ and the release")
    build.add_argument("--course", default=".", help="the course folder (default: .)")
    build.add_argument("--source-only", action="store_true", help="skip generate_assignment")
    build.add_argument("--exercise-files", action="store_true",
                       help="rewrite the exercise's generated files (its release layout and "
                            "fingerprints), for its author to commit")
    build.add_argument("--language", choices=LANGUAGES,
                       help="build one language's assignment only (formgrader then shows "
                            "each student out of 100; default: both)")
    build.set_defaults(run=_build, parser=build)

    doctor = commands.add_parser("doctor", help="check a course as it stands, one line each")
    doctor.add_argument("--course", default=".", help="the course folder (default: .)")
    doctor.set_defaults(run=_doctor, parser=doctor)

    gradescope = commands.add_parser("gradescope", help="build Gradescope's autograder.zip")
    gradescope.add_argument("--out", default="autograder.zip", help="where to write the zip")
    gradescope.set_defaults(run=_gradescope, parser=gradescope)

    demo = commands.add_parser("demo", help="release, self-check and grade a sample class")
    demo.add_argument("--keep", metavar="DIR", help="build the demo course here and keep it")
    demo.add_argument("--seed", type=int, help="seed for the hidden inputs")
    demo.set_defaults(run=_demo, parser=demo)
    return top


def positive_count(text):
    """--jobs: a whole number of at least 1, refused while parsing, before any work."""
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, not {text}")
    return count


def parsed(argv):
    """The arguments; an option the command does not know is refused with that command's
    usage (argparse alone would show the top-level one, which does not list it)."""
    top = parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args, unknown = top.parse_known_args(argv)
    if unknown:
        before_command = argv[:argv.index(args.command)]
        said_to = top if any(word in before_command for word in unknown) else args.parser
        said_to.error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


class _Stderr(logging.StreamHandler):
    """A handler that writes to whatever sys.stderr is when a message comes."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _ignored):
        pass


def log_to_stderr(verbose=False):
    """The kit's log messages on stderr, each line starting "mhakit: <LEVEL>: ";
    warnings and errors only, unless ``verbose``."""
    handler = _Stderr()
    handler.setFormatter(logging.Formatter("mhakit: %(levelname)s: %(message)s"))
    logger = logging.getLogger("mhakit")
    logger.handlers[:] = [handler]
    logger.setLevel(logging.INFO if verbose else logging.WARNING)


def one_blas_thread():
    """numpy's OpenBLAS starts a thread per core as it loads, which spins for up to about
    0.1 s of CPU (measured: in the command's process and in the workers' forkserver) and
    then never has work: the grader's products are small, and its parallel work is
    processes. Only in a process that has not imported numpy yet, the command's own: a
    program that calls ``main`` keeps its environment, and so do the kernels it starts."""
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def main(argv=None):
    one_blas_thread()
    args = parsed(argv)
    log_to_stderr(args.verbose)
    from ..exercise import load
    from ..settings import pass_on, settings

    try:
        given = settings()  # a malformed MHAKIT_* variable: one line, before any work
    except ValueError as error:
        print(f"mhakit: {error}", file=sys.stderr)
        return 2
    # --exercise first (what this command builds or grades), then the course's others.
    folders = [args.exercise] * bool(args.exercise) + [
        folder for folder in (given.exercise or "").split(os.pathsep) if folder]
    for folder in folders:
        try:
            load(folder)
        except (OSError, ValueError, ImportError) as error:
            print(f"mhakit: exercise {folder}: {error}", file=sys.stderr)
            return 2
    if folders:  # the grading workers and nbgrader's subprocesses read it too
        pass_on(exercise=os.pathsep.join(dict.fromkeys(str(Path(f).resolve()) for f in folders)))
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
