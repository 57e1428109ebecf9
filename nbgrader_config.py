# The repository root is the nbgrader course directory.
c = get_config()  # noqa: F821 - provided by nbgrader

c.CourseDirectory.course_id = "mha-kit"
c.CourseDirectory.source_directory = "source"
c.CourseDirectory.release_directory = "assignments"
c.CourseDirectory.submitted_directory = "submitted"
c.CourseDirectory.autograded_directory = "autograded"
c.CourseDirectory.feedback_directory = "feedback"

c.ClearSolutions.code_stub = {"python": "# 在这里写你的代码 / YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "在这里作答（选做）/ YOUR ANSWER HERE (optional)"

# nbgrader's release steps, in nbgrader's order, with one change: the quiz's answer
# cells keep a stub that does not raise, so an untouched notebook runs to its end.
c.GenerateAssignment.preprocessors = [
    "nbgrader.preprocessors.IncludeHeaderFooter",
    "nbgrader.preprocessors.InstantiateTests",
    "nbgrader.preprocessors.LockCells",
    "mhakit.integrations.nbgrader_plugin.ClearSolutionsKeepingQuizStubs",
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.CheckCellMetadata",
    "nbgrader.preprocessors.ComputeChecksums",
    "nbgrader.preprocessors.SaveCells",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbgrader.preprocessors.ClearMarkScheme",
    "nbgrader.preprocessors.ComputeChecksums",
    "nbgrader.preprocessors.CheckCellMetadata",
]

# Grade in isolation: nbgrader's Execute step (which would run the student's cells in a
# kernel, where one line can rewrite the tests) is replaced by mha-kit's grader, which
# runs the answer cells in a locked-down child process and fills in the test cells'
# outputs. The other steps are nbgrader's, in nbgrader's order, two of them through a
# subclass of the kit's whose comment says what it changes.
c.Autograde.sanitize_preprocessors = [
    "mhakit.integrations.nbgrader_plugin.DetectTampering",  # before OverwriteCells hides the edits
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.DeduplicateIds",
    "nbgrader.preprocessors.OverwriteKernelspec",
    "mhakit.integrations.nbgrader_plugin.RestoreLockedCells",  # OverwriteCells, no false alarms
    "mhakit.integrations.nbgrader_plugin.CheckCellMetadataOnce",  # the schema checked once
]
# The kit's bounded notebook reader, which `mhakit grade` uses too: a file that is no
# notebook is graded 0 and flagged with the reason, instead of failing with a traceback.
# nbgrader builds it once per run, before the first submission, so it is also the gate, on
# the command line and behind formgrader's Autograde button: it refuses, in one line and
# with every earlier grade left as it was, to autograde an assignment that the gradebook
# lacks (run `mhakit build` first), or where nothing can hide the course from student
# code (README: "Where you grade"), or where other people's accounts can read the course
# or the kit's answers (README: "0. Setup"). allow_unconfined = True and
# allow_shared = True grade there anyway; the first flags every grade for review.
c.Autograde.exporter_class = "mhakit.integrations.nbgrader_plugin.BoundedNotebookReader"
c.BoundedNotebookReader.allow_unconfined = False
c.BoundedNotebookReader.allow_shared = False
# nbconvert validates the notebook against nbformat's schema after every one of the steps
# above and below; this option of nbconvert's validates it once, after the last step, so
# the notebook nbgrader saves is still checked.
c.BoundedNotebookReader.optimistic_validation = True
c.Autograde.autograde_preprocessors = [
    "mhakit.integrations.nbgrader_plugin.IsolatedAutograde",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "mhakit.integrations.nbgrader_plugin.FlagTampering",
    "nbgrader.preprocessors.AssignLatePenalties",
    "mhakit.integrations.nbgrader_plugin.CheckCellMetadataOnce",  # the schema checked once
]

# `nbgrader collect` and formgrader's Collect button: the kit's, which follows no link, on a
# shared exchange refuses a folder not owned by the student it names, takes the latest
# submission the exchange saw, and records what it refused (mhakit/integrations/collect.py).
c.ExchangeFactory.collect = "mhakit.integrations.collect.CheckedCollect"

# Feedback shows each check's outcome, never the hidden test regions of the test cells.
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    "nbgrader.preprocessors.ClearHiddenTests",
]

# `nbgrader export`: one row per student for each exercise, whichever language's assignment
# they submitted (both: the later counts, and the row says so), the auto-graded score out
# of 100, the written answers apart as extra credit (mhakit/integrations/export.py).
c.ExportApp.plugin_class = "mhakit.integrations.export.ExerciseExport"
