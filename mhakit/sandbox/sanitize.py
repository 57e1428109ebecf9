"""Text and shapes that come from student code, made fit for feedback.

The child is the student's code, so the text it sends about an exception is the student's
too: a submission can raise ``ValueError(base64(hidden input))`` or return an empty array
whose axes are ``int(x * 1e6)``, and read its hidden inputs (or, through the stand-ins, the
reference's results) in its own feedback. This module is where the grader cuts that
channel down. It is pure: numpy and the standard library, no state, no wording.

Why a narrow channel is enough, rather than none at all:

* **What leaks is worth nothing later.** Every grading run draws a new seed, so new hidden
  inputs; every Gradescope resubmission is a new run. Inputs read off one run's feedback
  never come back in another, and their expected values help with nothing but that run,
  which is already over when its feedback is read.
* **What is left is small and public-shaped.** After ``student_text`` a message holds at
  most ``limit`` characters, no digit string, float, hex, base64 or mixed letter-digit
  token, no spelled-out run of numbers, and at most ``MAX_NUMBERS`` integers, each one
  of the call's own public sizes (the shapes of the grader's inputs are shown in the
  checks' messages already) and each in a place where numpy or Python put sizes
  (a shape tuple, or after "axis", "size", "dimension", ...). A shape keeps only the
  axis lengths in that same public set (``shape_text``). Plain words remain, because an
  honest message needs them; a code spelled in ordinary letters is what a determined
  submission could still use, bounded by ``limit`` per failed check, a few dozen checks
  per run, and worthless for the reason above.

What honest messages keep: the exception's type (when it is Python's or numpy's),
their words, and numbers such as numpy's "operands could not be broadcast together with
shapes (2,3,4) (2,5,4)" when those sizes are the call's own.
"""

import builtins
import re
import unicodedata

import numpy as np

MAX_INPUT = 4000     # characters looked at, whatever the child sent
MAX_NUMBERS = 12     # integers shown per message
MAX_WORD = 24        # letters in one word
MAX_AXES = 8         # axes shown of one shape
HIDDEN = "…"         # what replaces a run of removed tokens

# Exception types whose names may be shown: Python's own and numpy's. Any other class is
# the student's, and its name is text the student chose.
KNOWN_TYPES = frozenset(
    [name for name, value in vars(builtins).items()
     if isinstance(value, type) and issubclass(value, BaseException)]
    + [name for name in dir(getattr(np, "exceptions", object())) if not name.startswith("__")]
    + ["LinAlgError", "UFuncTypeError", "_UFuncNoLoopError", "_UFuncBinaryResolutionError",
       "_UFuncCastingError", "_UFuncInputCastingError", "_UFuncOutputCastingError",
       "_ArrayMemoryError", "AxisError"])

# Words after which numpy and Python write a size, an axis or a count.
SIZE_WORDS = frozenset("""axis axes size sizes dimension dimensions dim dims ndim index indices
    operand operands shape shapes length len got expected given takes from but than least
    most exactly by into with of and d_model num_heads d_k d_v d_q t t_q t_k b h n m k
    heads width batch""".split())
# Words that honest messages put after a size: "4 heads", "10 columns", "2-dimensional".
SIZE_NOUNS = frozenset("""column columns row rows head heads dimension dimensions dimensional
    dims d axis axes element elements entries entry item items value values argument
    arguments positional feature features token tokens""".split())

NUMBER_WORDS = frozenset("""zero one two three four five six seven eight nine ten eleven
    twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty
    fifty sixty seventy eighty ninety hundred thousand million billion point minus oh nil
    nought naught""".split())
# "one" and "zero" are words of honest messages ("more than one element", "zero-size
# array"); alone they stay, next to another number word they go.
HARMLESS_ALONE = frozenset({"one", "zero"})
CHINESE_NUMERALS = frozenset("零〇一二三四五六七八九十百千万亿两壹贰叁肆伍陆柒捌玖拾佰仟点负")

DTYPE_WORD = re.compile(r"(?:u?int|float|complex|bool)(?:8|16|32|64|128|256)?")
# A word of letters (and underscores) shaped as people write words: lower case,
# Capitalised, ALL CAPS, snake_case or CamelCase of up to three humps.
PLAIN_WORD = re.compile(
    r"_*(?:[A-Za-z][a-z]*)(?:_+[A-Za-z][a-z]*)*_*|_*[A-Z]+(?:_+[A-Z]+)*_*|(?:[A-Z][a-z]+){1,3}")
HEX_WORD = re.compile(r"[a-fA-F]{6,}")

TOKEN = re.compile(r"(?P<number>[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?(?![A-Za-z0-9_]))"
                   r"|(?P<word>[A-Za-z0-9_]+)"
                   r"|(?P<cjk>[\u4e00-\u9fff]+)"
                   r"|(?P<space>\s+)"
                   r"|(?P<mark>.)", re.S)
# Characters that may appear at all: printable ASCII, Chinese characters and punctuation.
CJK_MARKS = "，。：；、（）《》“”‘’？！…—·"
GLUE = set("-'\"`:=#")  # between a size word and its number
ARITHMETIC = set("%/*×÷<>!")  # "10 % 4 != 0"


# ----------------------------------------------------------------- public numbers

def numbers_of(*values):
    """The public integers of a call: its arrays' axis lengths, ranks and sizes and its
    integer arguments, with 0, 1 and the products and exact quotients of two of them."""
    base = {0, 1}

    def walk(value, depth=0):
        if depth > 4:
            return
        if isinstance(value, np.ndarray):
            base.update(int(n) for n in value.shape)
            base.update((value.ndim, int(value.size)))
        elif isinstance(value, (bool, np.bool_)):
            return
        elif isinstance(value, (int, np.integer)):
            base.add(abs(int(value)))
        elif isinstance(value, (tuple, list)):
            if value and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                             for v in value):
                base.update(abs(int(v)) for v in value)  # a shape given as a tuple
            else:
                for item in value[:64]:
                    walk(item, depth + 1)
        elif isinstance(value, dict):
            for item in list(value.values())[:64]:
                walk(item, depth + 1)

    for value in values:
        walk(value)
    small = sorted(n for n in base if n <= 1 << 20)
    allowed = set(small)
    for a in small:
        for b in small:
            allowed.add(a * b)
            if b > 1 and a % b == 0:
                allowed.add(a // b)
    return frozenset(allowed)


def shape_text(shape, context_numbers=()):
    """A returned shape for feedback, e.g. "(3, ?, 6)": an axis length is shown only when
    it is 0, 1, an axis length, rank or size of the call's inputs or of the expected result,
    or a product or exact quotient of two of those (``numbers_of``); any other is "?". At most
    ``MAX_AXES`` axes are shown. So an empty array of shape (123456, 0) cannot carry 123456.
    """
    allowed = _allowed(context_numbers)
    try:
        axes = [int(n) for n in tuple(shape)]
    except (TypeError, ValueError):
        return "(?)"
    shown = [str(n) if n in allowed else "?" for n in axes[:MAX_AXES]]
    if len(axes) > MAX_AXES:
        shown.append(HIDDEN)
    return "(" + ", ".join(shown) + ("," if len(shown) == 1 else "") + ")"


def shown_against(*values):
    """A ``show`` for the comparisons (``framework.expect_array``): shapes and lengths in
    the public numbers of ``values`` only, the call's inputs and its expected result, or
    the expected result alone in a public check (``framework.showing``). The numbers
    are worked out the first time something is shown, which is only when a check fails."""
    known = []  # the numbers, once worked out (functools.cache costs more to make)

    def public():
        if not known:
            known.append(numbers_of(*values))
        return known[0]

    def show(kind, value):
        if kind == "shape":
            return shape_text(value, public())
        return count_text(value, public())
    return show


def count_text(count, context_numbers=()):
    """A length that student code chose (of a returned tuple, say): shown when it is at
    most 4 or one of the call's public numbers, "?" otherwise."""
    try:
        count = int(count)
    except (TypeError, ValueError):
        return "?"
    return str(count) if 0 <= count <= 4 or count in _allowed(context_numbers) else "?"


def _allowed(context_numbers):
    if isinstance(context_numbers, frozenset):
        return context_numbers
    return frozenset({0, 1} | {int(n) for n in context_numbers})


# ----------------------------------------------------------------- text

def student_text(text, context_numbers=(), limit=160):
    """``text`` from student code (an exception described as "Type: message") made fit for
    feedback: one line of valid UTF-8, at most ``limit`` characters, with every encoding
    this module knows of removed. ``context_numbers`` are the integers it may show, for
    example ``numbers_of(args, kwargs)`` of the call that raised.

    >>> student_text("ValueError: operands could not be broadcast together with shapes "
    ...              "(2,3,4) (2,5,4) ", numbers_of(np.ones((2, 3, 4)), np.ones((2, 5, 4))))
    'ValueError: operands could not be broadcast together with shapes (2,3,4) (2,5,4)'
    >>> student_text("ValueError: aGVsbG8gd29ybGQ= 0.8871 deadbeef 123456")
    'ValueError: …'
    """
    allowed = _allowed(context_numbers)
    text = _clean_characters(str(text)[:MAX_INPUT])
    match = re.match(r"\s*([A-Za-z_][A-Za-z0-9_.]{0,80})\s*:\s?", text)
    kind, message = "", text
    if match:
        name = match.group(1).rsplit(".", 1)[-1]
        kind = name if name in KNOWN_TYPES else "Exception"
        message = text[match.end():]
    elif re.fullmatch(r"\s*[A-Za-z_][A-Za-z0-9_.]{0,80}\s*", text):
        name = text.strip().rsplit(".", 1)[-1]
        return name if name in KNOWN_TYPES else "Exception"
    body = _clean_message(message, allowed)
    line = f"{kind}: {body}" if kind and body else (kind or body)
    return _bounded(line, limit)


def _clean_characters(text):
    """Valid UTF-8 of the characters a message needs; whitespace becomes one space."""
    text = "".join("?" if "\ud800" <= ch <= "\udfff" else ch for ch in text)
    text = unicodedata.normalize("NFKC", text)  # full-width and superscript digits are digits
    kept = []
    for ch in text:
        if ch.isspace():
            kept.append(" ")
        elif " " < ch <= "~" or "\u4e00" <= ch <= "\u9fff" or ch in CJK_MARKS:
            kept.append(ch)
        else:
            kept.append("?")
    return " ".join("".join(kept).split())


def _clean_message(message, allowed):
    tokens = [(m.lastgroup, m.group()) for m in TOKEN.finditer(message)]
    words = [i for i, (kind, _) in enumerate(tokens) if kind == "word"]
    out = []  # (kind, text); kind "gone" marks a removed token
    shown_numbers = 0
    for index, (kind, text) in enumerate(tokens):
        if kind == "number":
            keep = ("." not in text and "e" not in text.lower() and int(text) in allowed
                    and shown_numbers < MAX_NUMBERS and _in_a_size_place(tokens, index))
            shown_numbers += keep
            out.append(("number", text) if keep else ("gone", ""))
        elif kind == "word":
            out.append(("word", text) if _plain_word(text, tokens, words, index)
                       else ("gone", ""))
        elif kind == "cjk":
            out.append(("cjk", _plain_chinese(text)))
        else:
            out.append((kind, text))
    return _join(out)


def _plain_word(text, tokens, words, index):
    if DTYPE_WORD.fullmatch(text):
        return True
    if any(ch.isdigit() for ch in text):  # letters mixed with digits: an encoding
        return False
    if len(text) > MAX_WORD or not PLAIN_WORD.fullmatch(text) or HEX_WORD.fullmatch(text):
        return False
    lower = text.lower()
    if lower in NUMBER_WORDS:
        if lower not in HARMLESS_ALONE:
            return False
        position = words.index(index)
        neighbours = [tokens[words[p]][1].lower() for p in (position - 1, position + 1)
                      if 0 <= p < len(words)]
        return not any(n in NUMBER_WORDS for n in neighbours)
    return True


def _plain_chinese(text):
    """Chinese words stay; numerals go, except a lone 一 (as in 一个, 一致)."""
    chars = list(text)
    result = []
    for i, ch in enumerate(chars):
        if ch in CHINESE_NUMERALS:
            lone = ch == "一" and not any(
                0 <= j < len(chars) and chars[j] in CHINESE_NUMERALS for j in (i - 1, i + 1))
            result.append(ch if lone else HIDDEN)
        else:
            result.append(ch)
    return re.sub(f"{HIDDEN}+", HIDDEN, "".join(result))[:MAX_WORD]


def _in_a_size_place(tokens, index):
    """True where honest messages write sizes: inside a bracketed tuple such as (2,3,4)
    or [2, 3], after a size word or a parameter's name ("axis 2", "size 5", "d_model=10",
    "divisible by 4"), or before a noun of sizes ("4 heads", "2-dimensional"). Digits
    listed one after another ("8 8 7 1", "leak 8") are in none of these places."""
    if _inside_brackets(tokens, index):
        return True
    j = index - 1
    while j >= 0 and (tokens[j][0] == "space" or tokens[j][1] in GLUE):
        j -= 1
    if j >= 0 and tokens[j][0] == "word" and tokens[j][1].lower() in SIZE_WORDS:
        return True
    if j >= 0 and tokens[j][1] in ARITHMETIC:
        return True
    k = index + 1
    while k < len(tokens) and tokens[k][0] == "space":
        k += 1
    if k < len(tokens) and tokens[k][1] in ARITHMETIC:
        return True  # "10 % 4", "10 != 0"
    while k < len(tokens) and (tokens[k][0] == "space" or tokens[k][1] == "-"):
        k += 1
    return k < len(tokens) and tokens[k][0] == "word" and tokens[k][1].lower() in SIZE_NOUNS


def _inside_brackets(tokens, index):
    """Inside ( ) or [ ] that hold only integers, commas, spaces, "?" and numpy's
    "newaxis" (einsum's remapped shapes, such as (3,newaxis,4))."""
    def reach(step, closer):
        j = index + step
        while 0 <= j < len(tokens):
            kind, text = tokens[j]
            if text in closer:
                return True
            if not (kind in ("number", "space") or text in (",", "?", "-", "newaxis")):
                return False
            j += step
        return False

    return reach(-1, "([") and reach(1, ")]")


def _join(out):
    """The kept tokens, with each run of removed ones (and the marks between them) as one
    "…", so that not even the number of removed tokens shows."""
    pieces = []
    pending = []  # marks and spaces after a removed token, not yet known to be kept
    gone = False
    for kind, text in out:
        if kind == "gone":
            if not gone:
                pieces.append(HIDDEN)
            gone, pending = True, []
        elif gone and kind in ("space", "mark") and text not in "()[]":
            pending.append(text)
        else:
            if gone:
                pieces.extend(pending)
            gone, pending = False, []
            pieces.append(text)
    if gone:
        pieces.extend(p for p in pending if p.isspace())
    text = "".join(pieces)
    text = re.sub(r"([^\w\s…])\1{3,}", r"\1\1\1", text)  # long runs of one mark
    text = re.sub(r"…(?:\s*…)+", HIDDEN, text)
    return " ".join(text.split())


def _bounded(line, limit):
    limit = max(8, int(limit))
    return line if len(line) <= limit else line[:limit - 1].rstrip() + HIDDEN
