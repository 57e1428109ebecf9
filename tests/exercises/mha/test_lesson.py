"""What the notebooks claim is true: the story's numbers, the facts, and the figures."""

import json
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from mhakit.exercises.mha import reference
from mhakit.selfcheck.wording import speaking
from tests.mha_exercise import (EXERCISE, PUBLIC, QUIZ_EXPLANATIONS, QUIZ_KEY, lending, plots,
                                show)

lesson = EXERCISE.content("lesson")


def test_one_head_spreads_and_cannot_tell_the_sentences_apart():
    _, weights = lending.one_head_view(reference.attention, lending.SENTENCE)
    nouns = weights[[0, 2, 6]]
    assert np.all((nouns > 0.27) & (nouns < 0.33)) and abs(weights.sum() - nouns.sum() - 0.1) < 0.01
    assert lending.compare_sentences(reference.multi_head_attention, 1) < 0.15


def test_three_heads_each_find_one_role_and_tell_the_sentences_apart():
    _, weights = lending.verb_view(reference.multi_head_attention, lending.three_head_weights(),
                                   3, lending.SENTENCE)
    for head, (_, _, where) in enumerate(lending.ROLES):
        assert weights[head, where] > 0.85
    assert lending.compare_sentences(reference.multi_head_attention, 3) > 0.8


def test_without_positions_attention_cannot_see_word_order():
    for heads in (1, 3):
        assert lending.compare_sentences(reference.multi_head_attention, heads,
                                         with_positions=False) < 1e-12


def test_removing_a_redundant_head_barely_matters_but_the_only_borrower_head_does():
    def change(head):
        return lending.change_when_removed(reference.multi_head_attention, head)

    assert change(3) < 0.1 and change(4) < 0.1  # near copies that W_o leans on little
    assert change(2) > 0.4  # the only head that finds 小红


def test_one_hundred_percent_focus_starves_the_others():
    spread, sharp = show.one_hundred_percent(reference.softmax)
    assert np.allclose(spread.sum(), 1) and np.allclose(sharp.sum(), 1)
    assert sharp[0] > 0.9 and sharp[2] < 0.05 and sharp[6] < 0.05


def test_the_stated_numbers_are_right():
    # √64 = 8: what the notebook's demo_divide_by_eight prints, from attention_scores.
    assert show.divide_by_eight(reference.attention_scores) == math.sqrt(64) == 8
    (h1, w1, p1, m1), (h8, w8, p8, m8) = show.cost(d_model=512, heads=8)
    assert (h1, w1, h8, w8) == (1, 512, 8, 64)
    assert p1 == p8 == 4 * 512 * 512 and m1 == m8
    # Quiz 5 asks the same about BERT-base (768 wide, 12 heads), not what the cell prints.
    (_, _, bert_1, _), (bert_heads, bert_width, bert_12, _) = show.cost(d_model=768, heads=12)
    assert (bert_heads, bert_width) == (12, 64)
    assert QUIZ_KEY["quiz_5"] == (bert_12, bert_1) == (4 * 768 ** 2,) * 2
    _, (h96, w96, _, _) = show.cost(d_model=12288, heads=96)  # GPT-3: 12288 = 96 × 128
    assert (h96, w96) == (96, 128)
    assert QUIZ_KEY["quiz_6"] == pytest.approx(math.sqrt(w96), abs=1e-4)  # √128 ≈ 11.31
    pets = show.word_vectors(reference.dot_product)
    assert pets[0] > pets[1]  # 猫·狗 > 猫·汽车


PROSE = [item for item in lesson.LESSON if isinstance(item, lesson.Text)]


@pytest.mark.parametrize("language", ["zh", "en"])
def test_the_prose_states_the_facts_and_none_of_the_story_errors(language):
    text = "\n".join(getattr(item, language) for item in PROSE)
    for fact in ("512", "64", "√64 = 8", "12 × 12 = 144", "12288 = 96 × 128", "87%", "94%",
                 "38", "48", "[1, 1, 0]"):
        assert fact in text, fact
    # The story chapter's errors (shared/article/README.md). The quiz offers some of them
    # as wrong choices on purpose, so only the teaching prose is scanned.
    for error in ("1152", "96 层，每层 12", "96 layers of 12", "八倍", "eight times as long",
                  "语法头", "情感头", "grammar head", "emotion head"):
        assert error not in text, error


def run_python(script, **env_changes):
    """The last line ``script`` prints, as JSON, from a fresh process with ``env_changes``."""
    env = dict(os.environ)
    env.pop("MHAKIT_PLOTS_NO_CJK", None)
    env.update(env_changes)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def render_plots(language, no_cjk, **env_changes):
    """Draw every figure in a fresh process; return (font, labels, warnings)."""
    script = f"""
import json, warnings
import matplotlib
matplotlib.use("Agg")
from mhakit.selfcheck.wording import speaking
in_language = speaking({language!r})  # held: a dropped context would end at once
in_language.__enter__()
from tests.mha_exercise import plots
from mhakit.exercises.mha import reference as S
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    figures = [plots.verb_bars(S.attention), plots.head_heatmaps(S.multi_head_attention),
               plots.shape_flow(S.split_heads, S.attention, S.concat_heads, S.output_projection),
               plots.removal_bars(S.multi_head_attention)]
    for figure in figures:
        figure.canvas.draw()
labels = [t.get_text() for f in figures for t in f.findobj(matplotlib.text.Text)]
print(json.dumps([plots.chinese_font(), labels, [str(w.message) for w in caught]]))
"""
    if no_cjk:
        env_changes["MHAKIT_PLOTS_NO_CJK"] = "1"
    return run_python(script, **env_changes)


def has_chinese(labels):
    return any("\u4e00" <= ch <= "\u9fff" for label in labels for ch in label)


@pytest.mark.slow
@pytest.mark.parametrize("language", ["zh", "en"])
def test_without_a_chinese_font_the_figures_fall_back_cleanly(language):
    font, labels, warnings = render_plots(language, no_cjk=True)
    assert font is None and warnings == []
    assert labels and not has_chinese(labels)


def need_a_chinese_font(reason):
    """Skip on a machine without one; fail in CI, which installs fonts-wqy-microhei
    (.ci/run), so that a font the figures cannot find is never a silent skip there."""
    if os.environ.get("CI"):
        pytest.fail(f"CI must draw the figures in Chinese, but {reason}. .ci/run installs "
                    "fonts-wqy-microhei: is it installed, and does plots.chinese_font() find it?")
    pytest.skip(f"{reason} (CI installs fonts-wqy-microhei)")


@pytest.mark.slow
def test_with_a_chinese_font_the_figures_speak_chinese_without_missing_glyphs():
    font, labels, warnings = render_plots("zh", no_cjk=False)
    if font is None:
        need_a_chinese_font("no font with Chinese glyphs was found on this machine")
    assert warnings == [] and has_chinese(labels)
    _, english, english_warnings = render_plots("en", no_cjk=False)
    assert english_warnings == [] and "who lends" in " ".join(english)


# matplotlib's font cache as it is on a machine where the Chinese font was installed after
# matplotlib first ran: every other font of the machine, none that draws Chinese.
STALE_FONT_CACHE = """
import json, os
import matplotlib
from matplotlib import font_manager
from tests.mha_exercise import plots
cache = os.path.join(matplotlib.get_cachedir(), f"fontlist-v{font_manager.FontManager.__version__}.json")
font_manager.fontManager.ttflist = [font for font in font_manager.fontManager.ttflist
                                    if not plots._has_glyph(font.fname)]
font_manager.json_dump(font_manager.fontManager, cache)
print(json.dumps(os.path.exists(cache)))
"""
FONTS_IN_THE_CACHE = """
import json
from matplotlib import font_manager
from tests.mha_exercise import plots
print(json.dumps([font.name for font in font_manager.fontManager.ttflist
                  if plots._has_glyph(font.fname)]))
"""


@pytest.mark.slow
def test_a_chinese_font_installed_after_matplotlib_built_its_font_cache_is_found(tmp_path):
    """matplotlib reads its font list from a cache and never looks again: the figures once
    stayed in pinyin for a student who installed a font as the advice says."""
    if not any(plots._has_glyph(path) for path in plots._system_chinese_font_files()):
        need_a_chinese_font("this machine has no font file that can draw Chinese")
    stale = {"MPLCONFIGDIR": str(tmp_path / "matplotlib")}
    assert run_python(STALE_FONT_CACHE, **stale)
    assert run_python(FONTS_IN_THE_CACHE, **stale) == []  # matplotlib alone knows none
    font, labels, warnings = render_plots("zh", no_cjk=False, **stale)
    assert font is not None, "the installed Chinese font was not found past the stale cache"
    assert warnings == [] and has_chinese(labels)


def test_without_fc_list_the_chinese_font_is_looked_for_where_it_usually_is(monkeypatch):
    def no_fontconfig(*args, **kwargs):
        raise FileNotFoundError("fc-list")

    monkeypatch.setattr(plots.subprocess, "run", no_fontconfig)
    found = plots._system_chinese_font_files()
    if not any(plots._has_glyph(path) for path in found):
        need_a_chinese_font("no Chinese font is in the places plots.KNOWN_CJK_FILES names")


def test_the_three_head_figure_is_the_articles_and_the_eight_heads_the_papers():
    multi = next(item for item in PROSE if item.id == "about_multi_head")
    assert "文章的图只画了三个头" in multi.zh and "原论文的图" not in multi.zh
    assert "the article's figure draws three" in multi.en
    assert "8 个头" in multi.zh and "8 heads of 64" in multi.en  # the paper's, said so


def test_each_numeric_answer_line_asks_for_what_its_key_is():
    """quiz_5's answer is a pair; its line once said "a number"."""
    from mhakit.authoring.build import quiz_answer_source

    numbers = [item for item in lesson.LESSON if isinstance(item, lesson.Number)]
    assert numbers
    for question in numbers:
        stub = quiz_answer_source(EXERCISE, question).splitlines()[0]
        key = QUIZ_KEY[question.variable]
        if isinstance(key, tuple):
            assert f"{len(key)} 个数的元组" in stub and f"a tuple of {len(key)} numbers" in stub
        else:
            assert "填一个数 / a number" in stub


def test_the_split_example_shows_head_0_as_the_reference_gives_it():
    task = next(item for item in PROSE if item.id == "task_split_heads")
    head_0 = reference.split_heads(np.arange(8.0).reshape(1, 8), 2)[0]
    assert head_0.tolist() == [[0.0, 1.0, 2.0, 3.0]]
    for text in (task.zh, task.en):
        assert "`[[0., 1., 2., 3.]]`" in text and "[..., i*d_k:(i+1)*d_k]" in text


def test_following_the_attention_hint_gives_zeros_where_nothing_may_be_seen():
    """The hint once said to fill -inf and take the softmax, which gives NaN for such a
    row, and then forbade the NaN."""
    task = next(item for item in PROSE if item.id == "task_attention")
    for text in (task.zh, task.en):
        assert "mask.any(axis=-1, keepdims=True)" in text
        assert "np.where(mask, weights, 0.0)" in text
    rng = np.random.default_rng(0)
    Q, K, V = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    mask = rng.random((3, 5)) < 0.6
    mask[0] = True
    mask[1] = False  # this query may see nothing
    scores = reference.attention_scores(Q, K)
    has_key = mask.any(axis=-1, keepdims=True)
    filled = np.where(has_key, np.where(mask, scores, -np.inf), 0.0)
    weights = np.where(mask, reference.softmax(filled, axis=-1), 0.0)
    expected = reference.attention(Q, K, V, mask)[1]
    assert not np.isnan(weights).any() and np.array_equal(weights[1], np.zeros(5))
    np.testing.assert_allclose(weights, expected)


def test_the_cost_demo_does_not_print_quiz_5s_answer(capsys):
    """demo_cost once printed quiz 5's answer just above the question."""
    demo = next(item for item in lesson.LESSON
                if isinstance(item, lesson.Demo) and item.id == "demo_cost")
    exec(demo.source, {"show": show})
    printed = capsys.readouterr().out.replace(",", "")
    assert "parameters" in printed or "参数" in printed
    for number in set(QUIZ_KEY["quiz_5"]):
        assert str(number) not in printed


# ------------------------------------------------------------------ one head numbering

# "头 2", "head 2", "heads 3 and 4"; not "每个头 64 个数", "3 heads of 5" or "one head 0.08".
ZH_HEAD = re.compile(r"头 ?(\d+)(?![\d.]| ?个)")
EN_HEAD = re.compile(r"\bheads? (\d+(?:(?:,? and |, | or )\d+)*)(?![\d.])")
FIRST_HEAD = re.compile(r"头 ?(\d+) ?在最?前|\bhead (\d+) first")


def heads_named(text):
    named = [int(n) for n in ZH_HEAD.findall(text)]
    for group in EN_HEAD.findall(text):
        named += [int(n) for n in re.findall(r"\d+", group)]
    return set(named)


def assert_numbered_from_0(text, num_heads=None):
    """The heads ``text`` names are 0, 1, ...: never ``num_heads`` itself."""
    named = heads_named(text)
    assert named, f"no head is named in {text!r}"
    assert min(named) == 0, (sorted(named), text)
    if num_heads is not None:
        assert max(named) < num_heads, (sorted(named), num_heads, text)
    for zh, en in FIRST_HEAD.findall(text):
        assert (zh or en) == "0", f"the head said to come first is not head 0: {text!r}"


def printed(capsys, demo, *functions):
    outputs = []
    for language in ("zh", "en"):
        with speaking(language):
            demo(*functions)
        outputs.append(capsys.readouterr().out)
    return "\n".join(outputs)


@pytest.mark.parametrize("cell, num_heads", [("about_multi_head", None),
                                             ("about_three_heads", 3),
                                             ("about_what_heads_learn", lending.REDUNDANT_HEADS)])
@pytest.mark.parametrize("language", ["zh", "en"])
def test_the_lesson_numbers_heads_from_0_as_the_code_does(cell, num_heads, language):
    text = getattr(next(item for item in PROSE if item.id == cell), language)
    assert_numbered_from_0(text, num_heads)


def test_the_quiz_and_the_written_answers_put_head_0_first():
    written = EXERCISE.content("sample_class").WRITTEN_ANSWERS
    texts = [QUIZ_EXPLANATIONS["quiz_2"]["zh"], QUIZ_EXPLANATIONS["quiz_2"]["en"],
             written["written_2"]]
    for text in texts:
        assert FIRST_HEAD.search(text), text
        assert_numbered_from_0(text)
    everything = " ".join(texts + [e[lang] for e in QUIZ_EXPLANATIONS.values() for lang in e]
                          + list(written.values()))
    assert 0 in heads_named(everything) and "head 1 first" not in everything


def test_the_demonstrations_print_the_heads_they_have_from_0(capsys):
    assert_numbered_from_0(printed(capsys, show.three_heads, reference.multi_head_attention),
                           lending.HEADS)
    assert heads_named(printed(capsys, show.remove_each_head, reference.multi_head_attention)) \
        == set(range(lending.REDUNDANT_HEADS))


@pytest.mark.parametrize("language", ["zh", "en"])
def test_the_figures_label_the_heads_from_0(language):
    import matplotlib
    matplotlib.use("Agg")
    with speaking(language):
        heatmaps = plots.head_heatmaps(reference.multi_head_attention)
        removal = plots.removal_bars(reference.multi_head_attention)
    titles = " ".join(ax.get_title() for ax in heatmaps.axes)
    assert_numbered_from_0(titles, lending.HEADS)
    ticks = [label.get_text() for label in removal.axes[0].get_xticklabels()]
    assert ticks == [str(head) for head in range(lending.REDUNDANT_HEADS)]


# ------------------------------------------------------------------ removing heads

REMOVAL_CLAIM = {"zh": (re.compile(r"^- ((?:头 \d+、?)+)"), re.compile(r"(\d+)% 左右|不到 (\d+)%")),
                 "en": (re.compile(r"^- Heads? (\d+(?:(?:,? and |, )\d+)*)"),
                        re.compile(r"about (\d+)%|under (\d+)%"))}


def bullets(text):
    """The markdown list items of ``text``, each with its continuation lines."""
    items = []
    for line in text.splitlines():
        if line.startswith("- "):
            items.append(line)
        elif line.startswith("  ") and items:
            items[-1] += " " + line.strip()
    return items


def removal_claims(text, language):
    """{head: (about, under)}: what the prose says removing each head does, in percent."""
    heads_first, percent = REMOVAL_CLAIM[language]
    claims = {}
    for item in bullets(text):
        subject = heads_first.match(item)
        if subject:
            (claim,) = percent.findall(item)  # one claim per item
            for head in re.findall(r"\d+", subject.group(1)):
                assert int(head) not in claims, f"head {head} is described twice"
                claims[int(head)] = tuple(int(n) if n else None for n in claim)
    return claims


@pytest.mark.parametrize("language", ["zh", "en"])
def test_the_prose_describes_every_removed_head_as_the_demo_measures_it(language, capsys):
    """The prose once said heads 3 and 4 copy heads 0 and 1 and that only head 2 finds the
    borrower, while the demo showed heads 0, 1 and 2 all costing 60%; head 5 went unnamed."""
    text = getattr(next(item for item in PROSE if item.id == "about_what_heads_learn"), language)
    with speaking(language):
        changes = show.remove_each_head(reference.multi_head_attention)
    shown = capsys.readouterr().out
    claims = removal_claims(text, language)
    assert sorted(claims) == list(range(len(changes))) == list(range(lending.REDUNDANT_HEADS))
    for head, (about, under) in claims.items():
        measured = 100 * changes[head]
        assert f"{changes[head]:4.0%}" in shown
        if about is not None:
            assert abs(measured - about) <= max(2, about / 10), (head, measured, about)
        else:
            assert measured < under, (head, measured, under)


@pytest.mark.parametrize("language", ["zh", "en"])
def test_the_removal_chart_draws_the_demos_numbers_in_percent(language):
    import matplotlib
    matplotlib.use("Agg")
    with speaking(language):
        figure = plots.removal_bars(reference.multi_head_attention)
        changes = show.remove_each_head(reference.multi_head_attention)
    (ax,) = figure.axes
    heights = [bar.get_height() for bar in ax.patches]
    np.testing.assert_allclose(heights, [100 * change for change in changes])
    assert "%" in ax.get_ylabel()


# ------------------------------------------------------------------ the shape flow

def reference_flow():
    """Each step of multi-head attention on the three-head story, by the reference."""
    X = lending.embed(lending.SENTENCE)
    W_q, W_k, W_v, W_o = lending.three_head_weights()
    Q, K, V = (reference.split_heads(X @ W, lending.HEADS) for W in (W_q, W_k, W_v))
    per_head, weights = reference.attention(Q, K, V)
    joined = reference.concat_heads(per_head)
    return [X, X @ W_q, Q, weights, per_head, joined, reference.output_projection(joined, W_o)]


def test_the_shape_flow_is_the_whole_of_multi_head_attention():
    """The flow once went split, concat, W_o: without projections and attention, the identity."""
    steps = show.shape_steps(reference.split_heads, reference.attention, reference.concat_heads,
                             reference.output_projection)
    expected = reference_flow()
    assert [array.shape for *_, array in steps] == [array.shape for array in expected]
    for (_, _, axes, array), right in zip(steps, expected):
        assert tuple(show.FLOW_SIZES[name] for name in axes) == right.shape, axes
        np.testing.assert_allclose(array, right)
    output, weights = reference.multi_head_attention(expected[0], *lending.three_head_weights(),
                                                     lending.HEADS)
    np.testing.assert_allclose(steps[-1][-1], output)
    np.testing.assert_allclose(steps[3][-1], weights)
    assert not np.allclose(steps[-1][-1], steps[0][-1])


@pytest.mark.parametrize("language", ["zh", "en"])
def test_the_shape_flow_figure_shows_every_step_and_its_shape(language):
    import matplotlib
    matplotlib.use("Agg")
    functions = (reference.split_heads, reference.attention, reference.concat_heads,
                 reference.output_projection)
    with speaking(language):
        figure = plots.shape_flow(*functions)
        steps = [(plots.text(zh, en), axes, array)
                 for zh, en, axes, array in show.shape_steps(*functions)]
    boxes = [t.get_text() for t in figure.axes[0].texts if t.get_text()]
    assert len(boxes) == len(steps)
    for box, (name, axes, array) in zip(boxes, steps):
        assert name in box and str(array.shape) in box
        assert "(" + ", ".join(axes) + ")" in box


# ------------------------------------------------------------------ word vectors

# Which of cat, dog and car each feature the demo may name is true of.
TRUE_OF = {"是动物": {"猫", "狗"}, "毛茸茸": {"猫", "狗"}, "能当宠物": {"猫", "狗"},
           "会叫": {"猫", "狗"}, "会跑": {"猫", "狗", "汽车"}, "有轮子": {"汽车"}}


def test_every_number_of_cat_dog_and_car_is_named(capsys):
    """The demo once showed 猫, 狗 and 汽车 as four numbers each, never saying what they were."""
    shown = printed(capsys, show.word_vectors, reference.dot_product)
    for vector in show.PETS.values():
        assert len(vector) == len(show.PETS_FEATURES)
    for zh, en in show.PETS_FEATURES:
        assert zh in shown and en in shown


def test_the_named_features_agree_with_cat_dog_and_car():
    for index, (feature, _) in enumerate(show.PETS_FEATURES):
        assert feature in TRUE_OF, f"say in TRUE_OF which of cat, dog and car are {feature}"
        for word, vector in show.PETS.items():
            if word in TRUE_OF[feature]:
                assert vector[index] >= 0.5, (word, feature, vector)
            else:
                assert vector[index] == 0, (word, feature, vector)


def test_every_demo_cell_runs_with_the_reference(capsys):
    """The demonstrations turn any error into one printed line, so a demo cell that calls
    them with the wrong functions would still run: it must print no such line."""
    import matplotlib
    matplotlib.use("Agg")
    demos = [item for item in lesson.LESSON if isinstance(item, lesson.Demo)
             and ("show." in item.source or "plots." in item.source)]
    assert {"demo_shape_flow", "demo_remove_heads", "demo_word_vectors"} <= {d.id for d in demos}
    names = {name: getattr(reference, name) for name in EXERCISE.function_names}
    for demo in demos:
        for language in ("zh", "en"):
            with speaking(language):
                exec(demo.source, {"show": show, "plots": plots, **names})
            shown = capsys.readouterr().out
            assert "演示没能运行" not in shown and "could not run" not in shown, (demo.id, shown)
            assert "先实现" not in shown and "Implement" not in shown, (demo.id, shown)


# ------------------------------------------------------------------ issue 25's slips

def test_quiz_5_asks_about_one_layer_of_the_twelve():
    """Quiz 5 once spoke of BERT-base's heads as if it had one layer: its key is one
    layer's count, and BERT-base has 12 layers of 12 heads (144 in all)."""
    question = next(item for item in lesson.LESSON
                    if isinstance(item, lesson.Number) and item.variable == "quiz_5")
    assert "12 层" in question.zh and "每层 12 个头" in question.zh and "一层" in question.zh
    assert "12 layers" in question.en and "one layer" in question.en
    assert "每层" in QUIZ_EXPLANATIONS["quiz_5"]["zh"]
    assert "per layer" in QUIZ_EXPLANATIONS["quiz_5"]["en"]
    assert QUIZ_KEY["quiz_5"] == (4 * 768 * 768,) * 2  # one layer, not 12
    # and the self-check's word for an answer of the wrong form says so too
    shipped_words = PUBLIC.wording.WORDS.texts["quiz-pair"]
    assert "一层" in shipped_words[0] and "one layer" in shipped_words[1]


def test_the_attention_hint_says_a_query_may_not_see_keys_not_scores():
    task = next(item for item in PROSE if item.id == "task_attention")
    assert "不许看那个键" in task.zh and "不许看的键" in task.zh and "不许看的位置" not in task.zh
    assert "may not see that key" in task.en and "scores that may not be seen" not in task.en
    assert "weights that may not be seen" not in task.en


def test_the_lesson_says_the_article_counts_heads_from_1_and_the_code_from_0():
    multi = next(item for item in PROSE if item.id == "about_multi_head")
    assert "文章给头编号从 1 数起" in multi.zh and "下标一样从 0 数起" in multi.zh
    assert "The article numbers the heads from 1" in multi.en
    assert "from 0, like indices in the code" in multi.en


def test_the_removal_demo_says_its_width_and_what_its_percentages_divide_by(capsys):
    out = printed(capsys, show.remove_each_head, reference.multi_head_attention)
    heads, width = lending.REDUNDANT_HEADS, lending.WIDE_MODEL
    assert (heads, width) == (6, 30)
    assert "6 heads of 5 numbers each, d_model = 30" in out
    assert "6 个头，每个头 5 个数，d_model = 30" in out
    assert "averaged before and after" not in out and "前后的平均" not in out
    assert "with and without the head" in out and "去掉前和去掉后" in out
    learned = next(item for item in PROSE if item.id == "about_what_heads_learn")
    assert "d_model = 30" in learned.zh and "d_model = 30" in learned.en
    # What it says it divides by is what lending.relative_difference divides by.
    a, b = np.array([3.0, 4.0]), np.array([0.0, 0.0])
    assert lending.relative_difference(a, b) == pytest.approx(5 / 2.5)


@pytest.mark.parametrize("tokens", [10, 7])
def test_the_cost_demo_prints_its_sequence_length_and_english_plurals(capsys, tokens):
    out = printed(capsys, show.cost, 512, 8, tokens)
    assert f"A sequence of {tokens} tokens, d_model = 512" in out
    assert f"一句 {tokens} 个词，d_model = 512" in out
    assert "head(s)" not in out
    assert "  1 head of 512:" in out and "  8 heads of 64:" in out


def chinese_char(text):
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


@pytest.fixture
def font(request, monkeypatch):
    """plots.chinese_font() as the parameter asks: "cjk" (skip without one) or "none"."""
    plots.chinese_font.cache_clear()
    if request.param == "none":
        monkeypatch.setenv("MHAKIT_PLOTS_NO_CJK", "1")
    else:
        monkeypatch.delenv("MHAKIT_PLOTS_NO_CJK", raising=False)
        if plots.chinese_font() is None:
            need_a_chinese_font("no font with Chinese glyphs was found on this machine")
    yield request.param
    plots.chinese_font.cache_clear()


@pytest.mark.parametrize("font", ["cjk", "none"], indirect=True)
@pytest.mark.parametrize("language", ["zh", "en"])
def test_the_heat_maps_have_a_colour_bar_and_label_the_tokens_as_the_text_writes_them(
        language, font):
    import matplotlib
    matplotlib.use("Agg")
    with speaking(language):
        figure = plots.head_heatmaps(reference.multi_head_attention)
    bars = [ax for ax in figure.axes if getattr(ax, "_colorbar", None) is not None]
    assert len(bars) == 1
    assert bars[0].get_ylabel() == ("注意力权重" if language == "zh" and font == "cjk"
                                    else "attention weight")
    panels = [ax for ax in figure.axes if ax not in bars]
    assert len(panels) == 8
    for ax in panels:
        images = ax.get_images()
        assert len(images) == 1 and images[0].get_clim() == (0, 1)
    for ax, sentence in zip(panels, [lending.SENTENCE] * 4 + [lending.SWAPPED] * 4):
        columns = [t.get_text() for t in ax.get_xticklabels()]
        rows = [t.get_text() for t in ax.get_yticklabels()]
        if font == "none":
            assert columns == rows == [plots.PINYIN[t] for t in sentence]
        elif language == "zh":
            assert columns == rows == list(sentence)
        else:  # the characters, and their pinyin beside them where there is room
            assert columns == list(sentence)
            assert rows == [f"{t} {plots.SOUND[t]}" for t in sentence]
            assert all(t.get_rotation() == 0 for t in ax.get_xticklabels())


@pytest.mark.parametrize("font", ["cjk", "none"], indirect=True)
def test_the_bar_charts_read_as_english_in_the_english_release(font):
    import matplotlib
    matplotlib.use("Agg")
    with speaking("en"):
        bars = plots.verb_bars(reference.attention)
        removal = plots.removal_bars(reference.multi_head_attention)
    title, ylabel = bars.axes[0].get_title(), removal.axes[0].get_ylabel()
    verb = "借 (lend)" if font == "cjk" else "the verb (lend)"
    assert title == f"One head: {verb} spreads its attention over three words"
    assert verb in ylabel and "lend's" not in ylabel and "借's" not in ylabel
    for text in (title, ylabel):
        assert chinese_char(text) == (font == "cjk")
        assert set(text.replace("借", "")) <= set(map(chr, range(32, 127))) | {"\n"}
    ticks = [t.get_text() for t in bars.axes[0].get_xticklabels()]
    if font == "cjk":
        assert ticks == [f"{t}\n{plots.SOUND[t]}" for t in lending.SENTENCE]
    else:
        assert ticks == [plots.PINYIN[t] for t in lending.SENTENCE]


def test_how_to_work_says_what_a_failing_check_and_not_run_yet_mean():
    intro = next(item for item in PROSE if item.id == "intro")
    assert "红底的短注" in intro.zh and "Validate 按钮把这一格记为 0 分" in intro.zh
    assert "不会打断 Run All" in intro.zh and "「not run yet」" in intro.zh
    assert "先运行上面的单元格（或者 Run All）" in intro.zh
    assert "short note on a red\nbackground" in intro.en
    assert "the Validate button scores that cell 0" in intro.en
    assert "It does not stop Run All" in intro.en and '"not run yet" means' in intro.en
    assert "run the cells above it (or Run All)" in intro.en
