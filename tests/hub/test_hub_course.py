"""The whole course on a real JupyterHub: one Unix account per person, PAM logins, the local
process spawner and configurable-http-proxy, driven in Chromium.

The README's hub section is played as written: its administrator's block as root, its
instructor's block as the instructor (tests/test_readme.py does the same for the
instructor's section). Three accounts, with unique names and passwords set by chpasswd,
log in through the hub's login page. The instructor releases both languages in
formgrader; one student fetches the Chinese assignment and the other the English one in
nbgrader's Assignment List, each validates and submits there; the instructor collects,
autogrades and releases feedback in formgrader; the students fetch their feedback; then
`nbgrader export` runs on the command line as the instructor.

Cost: the shared environment (the administrator's pip line) is kept between runs in
/opt/mhakit-hub-env, under a key made of that line, as tests/sandbox/ keeps its venv;
the instructor's environment is made on every run, from a pip cache kept between runs.
Everything else the test makes (accounts, the hub's processes) is removed at the end.

It runs beside other tests. What the administrator's block writes in /etc/jupyter, every
nbgrader command on the machine would read, so the block, the hub (and the servers it
spawns) and the instructor's commands run in a mount namespace of their own, in which the
folders the block writes in /etc are copies (private_etc); the machine's stay as they were.
"""

import csv
import hashlib
import os
import pwd
import re
import secrets
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.request
from contextlib import ExitStack, contextmanager
from pathlib import Path

import nbformat
import pytest

from tests.browser.conftest import TIMEOUT_MS
from tests.jupyter_server import free_port, stop
from tests.mha_exercise import fill, sample_answers
from tests.test_readme import copy_of_the_repository

pytestmark = [pytest.mark.slow, pytest.mark.browser]

REPO = Path(__file__).resolve().parent.parent.parent
DOCS = REPO / "docs"
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
START, END = "<!-- hub:start -->", "<!-- hub:end -->"
HUB_ENV = Path("/opt/mhakit-hub-env")           # the shared environment, kept between runs
PIP_CACHE = Path("/var/cache/mhakit-hub-pip")   # the instructor's pip cache, kept too
RUNUSER = shutil.which("runuser") or "/usr/sbin/runuser"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# What the administrator's block writes outside the folders the test makes. Their
# folders are copies in the hub's mount namespace: the machine's own never change.
ETC_FILES = [Path("/etc/jupyter/nbgrader_config.py"),
             Path("/etc/jupyter/jupyter_server_config.py"),
             Path("/etc/jupyterhub/jupyterhub_config.py"),
             Path("/etc/profile.d/jupyterhub.sh")]
# Who does what: (role, assignment, sample answers).
STUDENTS = (("zh", "mha", "alice_correct"), ("en", "mha_en", "bob_partly_correct"))
HUB_SECONDS = 180


def unavailable(why):
    """Fail under CI (.ci/run sets MHAKIT_BROWSER_REQUIRED), skip elsewhere."""
    if os.environ.get("CI") or os.environ.get("MHAKIT_BROWSER_REQUIRED"):
        pytest.fail(f"CI must run the hub test, but {why}")
    pytest.skip(why)


def readme_blocks():
    """The hub section's two bash blocks: the administrator's, the instructor's."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert START in text and END in text, "the README's hub section is missing"
    section = text.split(START, 1)[1].split(END, 1)[0]
    blocks = re.findall(r"```bash\n(.*?)\n```", section, flags=re.S)
    assert len(blocks) == 2, blocks
    return blocks


def run(command, user=None, timeout=900, inside=(), **kwargs):
    """``command``, as ``user`` if given, in the mount namespace that ``inside`` enters
    (private_etc's prefix) if given; its output, once it has succeeded."""
    prefix = [*inside, *([RUNUSER, "-u", user, "--"] if user else [])]
    done = subprocess.run(prefix + command, capture_output=True, text=True, timeout=timeout,
                          **kwargs)
    assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"[-5000:]
    return done


def as_user(user, home, script, timeout=900, env=None, inside=()):
    """A bash script as ``user``, in ``home``, with a clean login-like environment."""
    environment = {"HOME": str(home), "USER": user, "LOGNAME": user, "PATH": SYSTEM_PATH,
                   "LANG": "C.UTF-8", **(env or {})}
    return run(["env", "-i", *[f"{k}={v}" for k, v in environment.items()],
                "bash", "-euo", "pipefail", "-c", script], user=user, timeout=timeout,
               cwd=home, inside=inside)


@contextmanager
def private_etc(base):
    """A mount namespace, held by a file in ``base``, in which each folder of ETC_FILES
    is a copy of the machine's (made here if the machine has none); yields the command
    prefix that runs a command in it. The machine's folders are as they were after."""
    holder = base / "namespace"
    holder.mkdir()
    # unshare keeps the namespace by binding it onto a file, on a mount that does not
    # propagate: the holder, bound onto itself and made private.
    run(["mount", "--bind", str(holder), str(holder)])
    made = [folder for folder in dict.fromkeys(path.parent for path in ETC_FILES)
            if not folder.exists()]
    try:
        run(["mount", "--make-private", str(holder)])
        (holder / "mnt").touch()
        binds = []
        for folder in dict.fromkeys(path.parent for path in ETC_FILES):
            folder.mkdir(parents=True, exist_ok=True)  # a place to bind the copy onto
            copy = base / "etc" / folder.name
            shutil.copytree(folder, copy, symlinks=True)
            binds.append(f"mount --bind {str(copy)!r} {str(folder)!r}")
        run(["unshare", f"--mount={holder / 'mnt'}", "--propagation", "private",
             "sh", "-euc", " && ".join(binds)])
        yield ["nsenter", f"--mount={holder / 'mnt'}", "--"]
    finally:
        subprocess.run(["umount", str(holder / "mnt")], capture_output=True)
        subprocess.run(["umount", str(holder)], capture_output=True)
        for folder in reversed(made):
            try:
                folder.rmdir()
            except OSError:
                pass


def administrators_script(block, names):
    """The administrator's block as the test runs it: its own names in the first line,
    the shared environment's pip line skipped when the kept environment was made by the
    same line, and the hub started by the test (on free ports) instead of the last line."""
    lines = block.splitlines()
    assert lines[0].startswith("export HUB_ENV=") and "EXCHANGE=" in lines[0]
    assert lines[-1].startswith("mkdir -p /srv/jupyterhub") and "jupyterhub\" -f" in lines[-1]
    out = ["export " + " ".join(f"{k}={v}" for k, v in names.items())]
    install = None
    for line in lines[1:-1]:
        if line.startswith(INSTALL):
            install = line
            if installed_marker(line).exists():
                continue
            shutil.rmtree(HUB_ENV, ignore_errors=True)
            line = f"{line} && touch {installed_marker(line)}"
        out.append(line)
    assert install is not None, "the administrator's block installs no shared environment"
    return "\n".join(out) + "\n", lines[-1]


INSTALL = 'python3 -m venv "$HUB_ENV"'  # how the block's line that makes the environment starts


def install_line():
    """The administrator's block's line that makes the shared environment."""
    lines = [line for line in readme_blocks()[0].splitlines() if line.startswith(INSTALL)]
    assert len(lines) == 1, "the administrator's block has one line that makes the environment"
    return lines[0]


def installed_marker(line):
    """The file that says HUB_ENV was made by this very install line."""
    return HUB_ENV / f".installed-{hashlib.sha256(line.encode()).hexdigest()[:16]}"


def instructors_script(block):
    """The instructor's block: its first line clones the kit; the test has copied this
    working tree to the same place (what a clone holds), so the line only changes folder."""
    lines = block.splitlines()
    assert lines[0].startswith('git clone "$KIT_REPO" ~/mha-kit')
    return "\n".join(["cd ~/mha-kit", *lines[1:]]) + "\n"


def answers(url, seconds=5):
    try:
        with urllib.request.urlopen(url, timeout=seconds) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def processes_of(uids):
    done = subprocess.run(["ps", "-e", "-o", "pid=,uid="], capture_output=True, text=True)
    return [int(pid) for pid, uid in (line.split() for line in done.stdout.splitlines())
            if int(uid) in uids]


class Hub:
    def __init__(self, url, instructor, students, passwords, exchange, inside):
        self.url, self.instructor, self.students = url, instructor, students
        self.passwords, self.exchange = passwords, exchange
        self.inside = inside  # the prefix that runs a command in the hub's namespace

    def home(self, user):
        return Path(pwd.getpwnam(user).pw_dir)

    @property
    def course(self):
        return self.home(self.instructor) / "mha-kit"


@pytest.fixture(scope="module")
def hub(chromium_path, hub_environment):
    """A running JupyterHub, set up by the README's two blocks, and its three accounts."""
    if os.geteuid() != 0:
        unavailable("a hub with real accounts is played by root (useradd, PAM, spawner)")
    for tool in ("useradd", "userdel", "chpasswd", "npm", "configurable-http-proxy"):
        if shutil.which(tool, path=SYSTEM_PATH) is None:
            unavailable(f"`{tool}` is missing (npm: `apt-get install -y npm`; the proxy: "
                        "`npm install -g configurable-http-proxy@5.3.0`, as .ci/run does)")
    if subprocess.run(["/usr/bin/python3", "-c", "import venv, ensurepip"]).returncode:
        unavailable("Debian's python3-venv is missing (`apt-get install -y python3-venv`)")
    admin_block, instructor_block = readme_blocks()

    tag = secrets.token_hex(3)
    instructor = f"mhkhi{tag}"
    students = {role: f"mhkh{role}{tag}" for role, _, _ in STUDENTS}
    people = [instructor, *students.values()]
    passwords = {name: secrets.token_urlsafe(12) for name in people}
    base = Path(tempfile.mkdtemp(prefix="mhakit-hub-"))
    os.chmod(base, 0o755)  # students must reach the exchange inside it
    state = base / "hub"   # the hub's database and cookie secret: root's alone
    state.mkdir(mode=0o700)
    saved = {path: path.read_bytes() if path.exists() else None for path in ETC_FILES}
    made, uids, process = [], set(), None
    log = base / "jupyterhub.log"
    namespace = ExitStack()
    try:
        inside = namespace.enter_context(private_etc(base))
        for name in people:
            run(["useradd", "--create-home", "--shell", "/bin/bash", name])
            made.append(name)
            uids.add(pwd.getpwnam(name).pw_uid)
        run(["chpasswd"], input="".join(f"{n}:{p}\n" for n, p in passwords.items()))

        # The administrator's block, as root.
        names = {"HUB_ENV": HUB_ENV, "EXCHANGE": base / "exchange", "INSTRUCTOR": instructor}
        script, start = administrators_script(admin_block, names)
        run(["bash", "-euo", "pipefail", "-c", script], timeout=1200, inside=inside,
            env={"PATH": SYSTEM_PATH, "HOME": "/root", "LANG": "C.UTF-8"})

        # The instructor's block, as the instructor, on a copy of this working tree.
        home = Path(pwd.getpwnam(instructor).pw_dir)
        copy_of_the_repository(home / "mha-kit")
        run(["chown", "-R", f"{instructor}:{instructor}", str(home / "mha-kit")])
        PIP_CACHE.mkdir(parents=True, exist_ok=True)
        run(["chown", "-R", f"{instructor}:", str(PIP_CACHE)])
        try:
            as_user(instructor, home, instructors_script(instructor_block), timeout=1200,
                    env={"PIP_CACHE_DIR": str(PIP_CACHE)}, inside=inside)
        finally:
            run(["chown", "-R", "root:root", str(PIP_CACHE)])

        # The hub, as the block's last line starts it, on free ports of 127.0.0.1.
        port = free_port()
        config = start.split(" -f ", 1)[1].split()[0]
        command = [*inside, str(HUB_ENV / "bin" / "jupyterhub"), "-f", config,
                   f"--JupyterHub.bind_url=http://127.0.0.1:{port}",
                   f"--JupyterHub.hub_bind_url=http://127.0.0.1:{free_port()}",
                   f"--ConfigurableHTTPProxy.api_url=http://127.0.0.1:{free_port()}"]
        with open(log, "w", encoding="utf-8") as output:
            process = subprocess.Popen(command, cwd=state, stdout=output,
                                       stderr=subprocess.STDOUT,
                                       env={"PATH": SYSTEM_PATH, "LANG": "C.UTF-8"})
        url = f"http://127.0.0.1:{port}"
        wait_for_hub(process, f"{url}/hub/api", log)
        yield Hub(url, instructor, students, passwords, base / "exchange", inside)
    finally:
        if process is not None:
            stop(process, seconds=60)  # the hub stops the proxy and the servers it started
        for pid in processes_of(uids):  # anything of the test's accounts still running
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        for name in made:
            subprocess.run(["userdel", "--remove", name], capture_output=True)
        namespace.close()
        changed = [path for path, content in saved.items()
                   if (path.read_bytes() if path.exists() else None) != content]
        for path in changed:  # had the namespace failed: the machine's, put back
            if saved[path] is None:
                path.unlink(missing_ok=True)
            else:
                path.write_bytes(saved[path])
        ARTIFACTS.mkdir(exist_ok=True)
        if log.exists():
            shutil.copy(log, ARTIFACTS / "jupyterhub.log")
        shutil.rmtree(base, ignore_errors=True)
    assert changed == [], f"the hub's setup changed the machine's own {changed}"


def wait_for_hub(process, url, log):
    """Poll the hub's API until it answers; stop early if it died."""
    import time

    deadline = time.monotonic() + HUB_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"jupyterhub exited with {process.returncode}:\n"
                               f"{log.read_text()[-5000:]}")
        if answers(url):
            return
        try:
            process.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            pass
    raise RuntimeError(f"jupyterhub did not answer {url}:\n{log.read_text()[-5000:]}")


def log_in(browser, hub, user):
    """A browser of one's own, logged in through the hub's login page, in JupyterLab."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    page.goto(f"{hub.url}/hub/login")
    page.locator("#username_input").fill(user)
    page.locator("#password_input").fill(hub.passwords[user])
    page.locator("#login_submit").click()
    # The hub spawns the server (a page that waits for it), then opens JupyterLab.
    page.wait_for_url(re.compile(rf"/user/{user}/lab"), timeout=3 * TIMEOUT_MS)
    page.locator(".lm-MenuBar").get_by_text("Nbgrader", exact=True).wait_for()
    return context, page


def nbgrader_menu(page, item):
    page.locator(".lm-MenuBar").get_by_text("Nbgrader", exact=True).click()
    page.locator(".lm-Menu").get_by_text(item, exact=True).click()


def open_formgrader(page):
    nbgrader_menu(page, "Formgrader")
    return page.frame_locator(".jp-MainAreaWidget:not(.lm-mod-hidden) iframe")


def close_success(formgrader, what):
    """Formgrader's answer to a button: a success modal, which is closed; an error fails."""
    from playwright.sync_api import expect

    modal = formgrader.locator(".modal:visible")
    expect(modal).to_have_count(1)
    text = modal.inner_text()
    assert "Success" in text, f"{what}: {text}"
    modal.locator("button[data-dismiss=modal]").first.click()
    expect(modal).to_have_count(0)


def assignment_row(formgrader, assignment):
    named = formgrader.get_by_role("link", name=assignment, exact=True)
    return formgrader.locator("#main-table tbody tr, tbody tr").filter(has=named).first


def save(page, name):
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def student_fetches_works_and_submits(browser, hub, role, assignment, sample):
    from playwright.sync_api import expect

    user = hub.students[role]
    context, page = log_in(browser, hub, user)
    nbgrader_menu(page, "Assignment List")
    named = re.compile(rf"(?<![\w-]){assignment}(?![\w-])")  # not mha-kit, not mha_en
    released = page.locator("#released_assignments_list")
    # A row's text runs its cells together ("mhamha-kitFetch"): match the name's own cell.
    own_name = page.locator(".item_name", has_text=re.compile(rf"^\s*{assignment}\s*$"))
    released.locator(".list_item").filter(has=own_name).get_by_role(
        "button", name="Fetch").click()
    fetched = page.locator("#fetched_assignments_list")
    expect(fetched).to_contain_text(assignment)
    notebook = hub.home(user) / assignment / "mha.ipynb"
    assert notebook.is_file()
    # The student's work: the sample answers, written into the fetched notebook as the
    # student (typing fourteen cells into the browser would test JupyterLab, not the kit).
    filled = fill(nbformat.read(str(notebook), as_version=4), sample_answers()[sample])
    run(["sh", "-c", f"cat > {str(notebook)!r}"], user=user, input=nbformat.writes(filled))
    # The fetched assignment opens to its notebook, with Validate and Submit.
    fetched.locator("a.assignment-notebooks-link").filter(has_text=named).click()
    fetched.get_by_role("button", name="Validate").first.click()
    dialog = page.locator(".jp-Dialog")
    expect(dialog.locator("#validation-message")).to_be_visible(timeout=5 * TIMEOUT_MS)
    validation = dialog.locator("#validation-message").inner_text()
    dialog.locator(".jp-Dialog-button.jp-mod-accept").click()
    expect(dialog).to_have_count(0)
    fetched.get_by_role("button", name="Submit").first.click()
    submitted = page.locator("#submitted_assignments_list")
    expect(submitted).to_contain_text(assignment, timeout=3 * TIMEOUT_MS)
    return context, page, validation


def test_a_course_on_jupyterhub_from_release_to_export(hub, browser):
    from playwright.sync_api import expect

    from nbgrader.api import Gradebook

    # The instructor releases both languages in formgrader.
    teacher, page = log_in(browser, hub, hub.instructor)
    formgrader = open_formgrader(page)
    for assignment in ("mha", "mha_en"):
        row = assignment_row(formgrader, assignment)
        expect(row).to_contain_text("draft")
        row.locator(".release a").click()
        close_success(formgrader, f"release {assignment}")
        expect(assignment_row(formgrader, assignment)).to_contain_text("released")
    outbound = hub.exchange / "mha-kit" / "outbound"
    assert {p.name for p in outbound.iterdir()} == {"mha", "mha_en"}

    # Each student fetches one language, works, validates and submits.
    sessions = {}
    for role, assignment, sample in STUDENTS:
        context, student_page, validation = student_fetches_works_and_submits(
            browser, hub, role, assignment, sample)
        sessions[role] = (context, student_page)
        if sample == "alice_correct":
            assert "Success" in validation, validation
    save(sessions["en"][1], "hub-student-assignments")

    # The instructor collects both, and autogrades each submission from formgrader.
    page.reload()
    formgrader = open_formgrader(page)
    for assignment in ("mha", "mha_en"):
        row = assignment_row(formgrader, assignment)
        row.locator(".collect a").click()
        close_success(formgrader, f"collect {assignment}")
    for role, assignment, _ in STUDENTS:
        student = hub.students[role]
        assert (hub.course / "submitted" / student / assignment / "mha.ipynb").is_file()
        formgrader.get_by_role("link", name="Manage Assignments").click()
        assignment_row(formgrader, assignment).locator(".num-submissions a").click()
        row = formgrader.locator("tbody tr").filter(has_text=student)
        expect(row).to_contain_text("needs autograding")
        row.locator(".autograde a").click()
        close_success(formgrader, f"autograde {student}")
        expect(row.locator(".status")).not_to_contain_text("needs autograding")

    with Gradebook(f"sqlite:///{hub.course / 'gradebook.db'}") as gradebook:
        scores = {role: (gradebook.find_submission(assignment, hub.students[role]).score,
                         gradebook.find_submission(assignment, hub.students[role]).max_score)
                  for role, assignment, _ in STUDENTS}
    assert scores["zh"] == (100, 100), scores
    assert 0 < scores["en"][0] < 100 and scores["en"][1] == 100, scores
    # What formgrader shows: each student's score on their assignment's submissions page.
    for role, assignment, _ in STUDENTS:
        formgrader.get_by_role("link", name="Manage Assignments").click()
        assignment_row(formgrader, assignment).locator(".num-submissions a").click()
        row = formgrader.locator("tbody tr").filter(has_text=hub.students[role])
        expect(row.locator(".score")).to_have_text("{:g} / {:g}".format(*scores[role]))
        if role == "zh":
            save(page, "hub-formgrader-scores")

    # Feedback, generated and released from formgrader.
    formgrader.get_by_role("link", name="Manage Assignments").click()
    for assignment in ("mha", "mha_en"):
        assignment_row(formgrader, assignment).locator(".generate-feedback a").click()
        close_success(formgrader, f"generate feedback {assignment}")
        assignment_row(formgrader, assignment).locator(".release-feedback a").click()
        close_success(formgrader, f"release feedback {assignment}")

    # Each student fetches the feedback from the Assignment List.
    for role, assignment, _ in STUDENTS:
        context, student_page = sessions[role]
        student_page.locator("#refresh_assignments_list").click()
        submitted = student_page.locator("#submitted_assignments_list")
        submitted.get_by_role("button", name="Fetch Feedback").first.click()
        expect(submitted).to_contain_text("view feedback")
        feedback = hub.home(hub.students[role]) / assignment / "feedback"
        assert list(feedback.glob("*/mha.html")), f"no feedback in {feedback}"
        context.close()

    # The export, on the command line, as the instructor.
    home = hub.home(hub.instructor)
    as_user(hub.instructor, home, "cd ~/mha-kit && .venv/bin/nbgrader export", inside=hub.inside)
    with open(hub.course / "grades.csv", newline="", encoding="utf-8") as handle:
        exported = {row["student_id"]: row for row in csv.DictReader(handle)}
    assert set(exported) == set(hub.students.values())
    for role, assignment, _ in STUDENTS:
        row = exported[hub.students[role]]
        assert float(row["max_score"]) == 100 and row["submitted"] == assignment
        assert float(row["score"]) == scores[role][0]
    # The doctor, as the instructor, finds nothing to fix in the course as it now stands.
    doctor = as_user(hub.instructor, home, "cd ~/mha-kit && .venv/bin/mhakit doctor",
                     inside=hub.inside).stdout
    assert not [line for line in doctor.splitlines() if line.startswith("FIX")], doctor
    assert "students: their nbgrader finds the same exchange" in doctor, doctor
    teacher.close()
    # The README's pictures.
    for name in ("hub-formgrader-scores", "hub-student-assignments"):
        shutil.copy(ARTIFACTS / f"{name}.png", DOCS / f"{name}.png")
