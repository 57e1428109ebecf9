"""The notebook's figures. matplotlib is needed here only; the checks never import it.

Chinese labels need a font with Chinese glyphs. Where the machine has none, every label
falls back to English and pinyin, so that no figure ever shows empty boxes.
(`sudo apt install fonts-wqy-microhei`, or any Noto CJK font, brings the Chinese back,
also where matplotlib had listed the machine's fonts before it was installed.)
"""

import functools
import glob
import os
import subprocess

import numpy as np

from . import lending, show
from mhakit.selfcheck.wording import language
from .show import needs_student_code

# Where Chinese fonts usually are, for machines without fontconfig's fc-list.
KNOWN_CJK_FILES = ("/usr/share/fonts/**/wqy-*.tt[cf]", "/usr/share/fonts/**/Noto*CJK*.[ot]t[cf]",
                   "~/.local/share/fonts/**/wqy-*.tt[cf]",
                   "~/.local/share/fonts/**/Noto*CJK*.[ot]t[cf]",
                   "/System/Library/Fonts/PingFang.ttc", "/System/Library/Fonts/STHeiti*.ttc",
                   "/Library/Fonts/Arial Unicode.ttf",
                   "/System/Library/Fonts/Supplemental/Arial Unicode.ttf",
                   "C:/Windows/Fonts/msyh.ttc", "C:/Windows/Fonts/simhei.ttf")
CJK_FAMILIES = ("WenQuanYi Micro Hei", "WenQuanYi Zen Hei", "Noto Sans CJK SC",
                "Noto Sans SC", "Source Han Sans SC", "Microsoft YaHei", "SimHei",
                "PingFang SC", "Heiti SC", "Arial Unicode MS")
# Without a Chinese font a token is drawn as this: pinyin, or the meaning where it says more.
PINYIN = {"小明": "Xiaoming", "把": "ba", "书": "book", "借": "lend", "给": "gei", "了": "le",
          "小红": "Xiaohong"}
# In the English release, with a font, the characters come first, as the text writes them,
# and their pinyin beside them.
# (Without tone marks: the Chinese fonts lack some of them, ǎ for one.)
SOUND = {"小明": "Xiaoming", "把": "ba", "书": "shu", "借": "jie", "给": "gei", "了": "le",
         "小红": "Xiaohong"}


def _has_glyph(path, char="借"):
    from matplotlib import ft2font
    try:
        return ft2font.FT2Font(path).get_char_index(ord(char)) != 0
    except (OSError, RuntimeError, ValueError):
        return False


@functools.lru_cache(maxsize=1)
def chinese_font():
    """The family of an installed font that can draw Chinese, or None."""
    if os.environ.get("MHAKIT_PLOTS_NO_CJK"):  # lets the tests try a machine without one
        return None
    return _chinese_font_matplotlib_knows() or _add_a_system_chinese_font()


def _chinese_font_matplotlib_knows():
    from matplotlib import font_manager
    fonts = font_manager.fontManager.ttflist
    # "Last Resort" fonts claim every character but draw only placeholder boxes.
    usable = [f for f in fonts if "last resort" not in f.name.lower()]
    ranked = sorted(usable, key=lambda f: f.name not in CJK_FAMILIES)
    return next((f.name for f in ranked if _has_glyph(f.fname)), None)


def _system_chinese_font_files():
    """Font files fontconfig says can draw Chinese, else those in the usual places."""
    try:
        listed = subprocess.run(["fc-list", "--format", "%{file}\n", ":lang=zh"],
                                capture_output=True, text=True, timeout=60).stdout.split("\n")
    except (OSError, subprocess.SubprocessError):  # no fontconfig: Windows, most Macs
        listed = []
    paths = [path for path in listed if path.strip()]
    if not paths:
        paths = [path for pattern in KNOWN_CJK_FILES
                 for path in sorted(glob.glob(os.path.expanduser(pattern), recursive=True))]
    return list(dict.fromkeys(paths))


def _add_a_system_chinese_font():
    """matplotlib lists only the fonts its cache (fontlist-*.json) found when it was
    built: a font installed afterwards, as the module's docstring advises, is missing
    from it until the cache is deleted. Find such a font and add it for this session."""
    from matplotlib import font_manager, ft2font
    for path in _system_chinese_font_files():
        if "last resort" in os.path.basename(path).lower() or not _has_glyph(path):
            continue
        try:
            font_manager.fontManager.addfont(path)
            return ft2font.FT2Font(path).family_name
        except (OSError, RuntimeError, ValueError):
            continue
    return None


def chinese():
    return language() == "zh" and chinese_font() is not None


def text(zh, en):
    return zh if chinese() else en


def word(token, sep=" "):
    """A token's label: its characters, as the text writes them; the English release adds
    the pinyin after ``sep``; without a Chinese font, PINYIN's spelling alone."""
    if chinese_font() is None:
        return PINYIN[token]
    return token if language() == "zh" else f"{token}{sep}{SOUND[token]}"


def verb_in_english():
    """借 as an English sentence names it: with its meaning, or the meaning alone."""
    return "借 (lend)" if chinese_font() is not None else "the verb (lend)"


def _figure(*args, **kwargs):
    import matplotlib.pyplot as plt
    return plt.subplots(*args, layout="constrained", **kwargs)


def _use_font(figure):
    """Give every text the Chinese font, and hand the figure back to be shown once.

    Closing it stops pyplot from showing it a second time at the end of the cell; the
    notebook still displays the returned figure.
    """
    import matplotlib.pyplot as plt
    family = chinese_font()
    if family:
        for item in figure.findobj(lambda artist: hasattr(artist, "set_fontfamily")):
            item.set_fontfamily([family, "DejaVu Sans"])
    plt.close(figure)
    return figure


@needs_student_code
def verb_bars(attention):
    """A bar chart of 借's attention with one set of Q, K, V."""
    _, weights = lending.one_head_view(attention, lending.SENTENCE)
    figure, ax = _figure(figsize=(6, 3))
    ax.bar([word(t, sep="\n") for t in lending.SENTENCE], weights, color="#4c72b0")
    ax.set_ylabel(text("注意力", "attention"))
    ax.set_ylim(0, 1)
    ax.set_title(text("一个头：「借」把注意力分给了三个词",
                      f"One head: {verb_in_english()} spreads its attention over three words"),
                 fontsize=10)
    return _use_font(figure)


@needs_student_code
def head_heatmaps(multi_head_attention):
    """Attention weights of every token, 1 head vs 3 heads, for both sentences."""
    rows = []  # the student's code runs first: no half-drawn figure if it is not ready
    for sentence in (lending.SENTENCE, lending.SWAPPED):
        X = lending.embed(sentence)
        _, one = multi_head_attention(X, *lending.one_head_weights(), 1)
        _, three = multi_head_attention(X, *lending.three_head_weights(), 3)
        rows.append((sentence, [np.asarray(one)[0]] + list(np.asarray(three))))
    titles = [text("1 个头", "1 head")] + [text(f"头 {h}：{zh}", f"head {h}: {en}")
                                          for h, (zh, en, _) in enumerate(lending.ROLES)]
    figure, axes = _figure(2, 4, figsize=(13, 6.5))
    for ax_row, (sentence, panels) in zip(axes, rows):
        # The columns are narrow: the characters alone, upright as the text writes them
        # (the rows beside them give the pinyin); spelled out, the words are turned.
        upright = chinese_font() is not None
        columns = list(sentence) if upright else [word(t) for t in sentence]
        for ax, weights, title in zip(ax_row, panels, titles):
            image = ax.imshow(weights, vmin=0, vmax=1, cmap="Blues")
            ax.set_xticks(range(len(columns)), columns, rotation=0 if upright else 90)
            ax.set_yticks(range(len(sentence)), [word(t) for t in sentence])
            ax.set_title(title)
    bar = figure.colorbar(image, ax=axes, shrink=0.6)  # one scale, 0 to 1, for every panel
    bar.set_label(text("注意力权重", "attention weight"))
    figure.suptitle(text("每一行是一个词在看谁：上面是原句，下面是把人名对调的句子",
                         "Each row: where one token looks. Top: the sentence; bottom: names swapped"))
    return _use_font(figure)


@needs_student_code
def shape_flow(split_heads, attention, concat_heads, output_projection):
    """The shapes one sentence takes on its way through multi-head attention."""
    steps = show.shape_steps(split_heads, attention, concat_heads, output_projection)
    figure, ax = _figure(figsize=(15, 2.0))
    ax.set_axis_off()
    gap = 2.2
    for i, (zh, en, axes, array) in enumerate(steps):
        names = "(" + ", ".join(axes) + ")"
        ax.text(i * gap, 0, f"{text(zh, en)}\n{names}\n= {array.shape}", ha="center",
                va="center", fontsize=10.5, bbox=dict(boxstyle="round", facecolor="#e8eef7"))
        if i:
            ax.annotate("", xy=(i * gap - 0.95, 0), xytext=(i * gap - 1.25, 0),
                        arrowprops=dict(arrowstyle="->"))
    ax.set_xlim(-1.1, (len(steps) - 1) * gap + 1.1)
    ax.set_ylim(-0.7, 0.7)
    return _use_font(figure)


@needs_student_code
def removal_bars(multi_head_attention):
    """How much 借's output changes when each of six heads is removed."""
    changes = [lending.change_when_removed(multi_head_attention, h)
               for h in range(lending.REDUNDANT_HEADS)]
    figure, ax = _figure(figsize=(6, 3))
    ax.bar([str(h) for h in range(len(changes))], [100 * c for c in changes], color="#dd8452")
    ax.set_xlabel(text("去掉的头", "head removed"))
    # The unit is show.remove_each_head's: the change's length over the output's length.
    ax.set_ylabel(text("「借」的输出变了\n（占输出长度的 %）",
                       f"change in the output of\n{verb_in_english()} (% of its length)"))
    return _use_font(figure)
