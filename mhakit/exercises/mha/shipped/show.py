"""The notebook's demonstrations: they call the student's functions and print what they find.

Each takes the student's functions as arguments. While one of them is not implemented
yet, the demonstration says so in one line instead of a traceback.
"""

import functools
import math

import numpy as np

from . import lending
from mhakit.selfcheck.runner import display_width
from mhakit.selfcheck.wording import pick


def say(zh, en):
    return pick((zh, en))


def needs_student_code(demo):
    """Turn NotImplementedError (and other errors) in the student's code into one line."""
    @functools.wraps(demo)
    def run(*functions, **options):
        try:
            return demo(*functions, **options)
        except NotImplementedError:
            names = ", ".join(getattr(f, "__name__", "?") for f in functions if callable(f))
            print(say(f"（先实现 {names}，这个演示才能运行。）",
                      f"(Implement {names} first; then this demonstration runs.)"))
        except Exception as error:  # noqa: BLE001 - the student's bug: one line, not a traceback
            print(say(f"（演示没能运行：{type(error).__name__}: {error}）",
                      f"(The demonstration could not run: {type(error).__name__}: {error})"))
        return None
    return run


def padded(label, width):
    return label + " " * max(1, width - display_width(label))


def percent(weights):
    return "  ".join(f"{word} {100 * w:4.1f}%" for word, w in zip(lending.SENTENCE, weights))


# ------------------------------------------------------------------ 1. word vectors

FRANCE_FEATURES = (("跟语言有关", "about a language"), ("是长大的地方", "a place one grows up in"),
                   ("是一个动作", "an action"))
PETS_FEATURES = (("是动物", "an animal"), ("毛茸茸", "furry"), ("会跑", "moves"),
                 ("有轮子", "has wheels"))
PETS = {"猫": [1.0, 0.9, 1.0, 0.0], "狗": [1.0, 0.8, 1.0, 0.0], "汽车": [0.0, 0.0, 1.0, 1.0]}


def feature_names(features):
    return pick(("、", ", ")).join(say(zh, en) for zh, en in features)


@needs_student_code
def word_vectors(dot_product):
    print(say("法国 = [1, 1, 0]，三个数依次表示：", "法国 (France) = [1, 1, 0]; the numbers mean: ")
          + feature_names(FRANCE_FEATURES))
    print(say("猫、狗、汽车各用 4 个数，依次表示：",
              "猫 (cat), 狗 (dog) and 汽车 (car) get 4 numbers each, meaning: ")
          + feature_names(PETS_FEATURES))
    for word, vector in PETS.items():
        print(f"  {word} = {vector}")
    cat, dog, car = (np.array(PETS[w]) for w in ("猫", "狗", "汽车"))
    pet_dog, pet_car = dot_product(cat, dog), dot_product(cat, car)
    print(f"猫·狗 = {float(pet_dog):.2f}    猫·汽车 = {float(pet_car):.2f}")
    shared = [name for name, a, b in zip(PETS_FEATURES, cat, car) if a and b]
    print(say(f"猫和狗四个数都差不多，点积大；"
              f"猫和汽车只在「{feature_names(shared)}」上相同，点积小。",
              f"Cat and dog are close on all four numbers, so their dot product is large; cat and "
              f"car share only \"{feature_names(shared)}\", so theirs is small."))
    return float(pet_dog), float(pet_car)


# ------------------------------------------------------------------ 2. one set of Q, K, V

@needs_student_code
def divide_by_eight(attention_scores):
    Q, K = np.ones((1, 64)), np.ones((1, 64))
    raw, scaled = float(Q[0] @ K[0]), float(attention_scores(Q, K)[0, 0])
    print(say(f"d_k = 64：点积是 {raw:g}，除以 √64 = {math.sqrt(64):g} 之后是 {scaled:g}。",
              f"d_k = 64: the dot product is {raw:g}; divided by √64 = {math.sqrt(64):g} it is {scaled:g}."))
    return scaled


# 借's scores toward the seven tokens with one head: the three nouns alike, about 30% each.
SPREAD_SCORES = np.array([2.48, 0.0, 2.48, 0.0, 0.0, 0.0, 2.48])


@needs_student_code
def one_hundred_percent(softmax):
    spread = softmax(SPREAD_SCORES)
    print(say("一组注意力照顾三个词：", "One set of attention, shared by three words:"))
    print("  " + percent(spread))
    sharp = softmax(SPREAD_SCORES + np.array([3.5, 0, 0, 0, 0, 0, 0]))
    print(say("想把小明看清楚，把他的分数调高：", "To see 小明 clearly, raise his score:"))
    print("  " + percent(sharp))
    print(say("加起来总是 100%：给了小明九成，书和小红就只剩一点。",
              "The shares always add up to 100%: give 小明 nine tenths and 书 and 小红 starve."))
    return spread, sharp


@needs_student_code
def one_set_of_qkv(attention):
    first, weights = lending.one_head_view(attention, lending.SENTENCE)
    second, _ = lending.one_head_view(attention, lending.SWAPPED)
    print(say("「借」的注意力：", "借's attention:"))
    print("  " + percent(weights))
    difference = lending.relative_difference(first, second)
    print(say(f"两句话里「借」拿到的内容相差 {difference:.2f}（0 表示完全一样）：它分不清谁借给谁。",
              f"借's result differs by {difference:.2f} between the two sentences (0 means "
              "identical): it cannot tell who lends to whom."))
    return difference


# ------------------------------------------------------------------ 3. several heads

@needs_student_code
def three_heads(multi_head_attention):
    _, weights = lending.verb_view(multi_head_attention, lending.three_head_weights(), 3,
                                   lending.SENTENCE)
    for head, ((zh, en, _), row) in enumerate(zip(lending.ROLES, weights)):
        print("  " + padded(say(f"头 {head}（{zh}）", f"head {head} ({en})"), 22) + percent(row))
    one = lending.compare_sentences(multi_head_attention, 1)
    three = lending.compare_sentences(multi_head_attention, 3)
    print(say(f"两句话的差别（0 表示完全一样）：一个头 {one:.2f}，三个头 {three:.2f}。",
              f"Difference between the two sentences (0 means identical): one head {one:.2f}, "
              f"three heads {three:.2f}."))
    blind = lending.compare_sentences(multi_head_attention, 3, with_positions=False)
    print(say(f"去掉向量里的位置部分，三个头的差别变成 {blind:.2f}：注意力本身看不见词序。",
              f"Without the position part, three heads differ by {blind:.2f}: attention itself "
              "cannot see word order."))
    return one, three, blind


# The axes of each step, by name; their sizes in the three-head story are FLOW_SIZES.
FLOW_SIZES = {"T": len(lending.SENTENCE), "d_model": lending.D_MODEL, "h": lending.HEADS,
              "d_k": lending.D_K, "h·d_k": lending.HEADS * lending.D_K}


def shape_steps(split_heads, attention, concat_heads, output_projection):
    """The three-head story's sentence on its way through multi-head attention, with the
    student's functions: [(zh, en, axis names, array)], one per step."""
    X = lending.embed(lending.SENTENCE)
    W_q, W_k, W_v, W_o = lending.three_head_weights()
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    Qh, Kh, Vh = (np.asarray(split_heads(M, lending.HEADS)) for M in (Q, K, V))
    per_head, weights = (np.asarray(a) for a in attention(Qh, Kh, Vh))
    joined = np.asarray(concat_heads(per_head))
    out = np.asarray(output_projection(joined, W_o))
    h = lending.HEADS
    return [("输入 X", "input X", ("T", "d_model"), X),
            ("Q、K、V：X 分别乘\nW_q、W_k、W_v", "Q, K, V: X times\nW_q, W_k, W_v",
             ("T", "d_model"), Q),
            (f"拆成 {h} 个头\n（Q、K、V 各拆一次）", f"split into {h} heads\n(Q, K, V alike)",
             ("h", "T", "d_k"), Qh),
            ("每个头的\n注意力权重", "each head's\nattention weights", ("h", "T", "T"), weights),
            ("每个头按权重\n混合 V", "each head blends\nits V by them", ("h", "T", "d_k"), per_head),
            ("拼接", "concatenate", ("T", "h·d_k"), joined),
            ("乘输出矩阵 W_o", "times W_o", ("T", "d_model"), out)]


# ------------------------------------------------------------------ 4. what heads learn

def six_head_role(head):
    """What one of the six heads does, in the words the demo prints: (zh, en)."""
    role, _ = lending.SIX_HEADS[head]
    if role is None:
        return "看虚词", "looks at function words"
    original = next(h for h, (r, _) in enumerate(lending.SIX_HEADS) if r == role)
    if original != head:
        return f"头 {original} 的复制品", f"a copy of head {original}"
    zh, en, _ = lending.ROLES[role]
    return zh, en


@needs_student_code
def remove_each_head(multi_head_attention):
    changes = [lending.change_when_removed(multi_head_attention, head)
               for head in range(lending.REDUNDANT_HEADS)]
    heads, width = lending.REDUNDANT_HEADS, lending.WIDE_MODEL
    print(say(f"{heads} 个头，每个头 {width // heads} 个数，d_model = {width}。",
              f"{heads} heads of {width // heads} numbers each, d_model = {width}."))
    print(say("一次去掉一个头，看「借」的输出变了多少：变化的长度占输出长度的百分比。"
              "去掉一个头，输出的长度也会变，所以这里的输出长度取去掉前和去掉后两个长度的平均。",
              "Removing one head at a time, how much 借's output changes: the change's length "
              "as a percentage of the output's length. Removing a head changes that length too, "
              "so the mean of the two lengths, with and without the head, is used."))
    labels = [say(f"去掉头 {head}（{zh}）", f"without head {head} ({en})")
              for head, (zh, en) in enumerate(map(six_head_role, range(len(changes))))]
    width = max(map(display_width, labels)) + 2
    for label, change in zip(labels, changes):
        print("  " + padded(label, width) + f"{change:4.0%}")
    return changes


# ------------------------------------------------------------------ 5. cost

def cost(d_model=512, heads=8, tokens=10):
    """Parameters and multiply-adds of one layer, with 1 head and with ``heads`` heads."""
    d_k = d_model // heads
    rows = []
    for h, width in ((1, d_model), (heads, d_k)):
        parameters = 3 * h * d_model * width + (h * width) * d_model
        projections = tokens * parameters
        attention = 2 * h * tokens * tokens * width  # scores, then the blend of V
        rows.append((h, width, parameters, projections + attention))
    print(say(f"一句 {tokens} 个词，d_model = {d_model}：",
              f"A sequence of {tokens} tokens, d_model = {d_model}:"))
    for h, width, parameters, multiply_adds in rows:
        print(say(f"  {h} 个头 × {width} 个数：参数 {parameters:,}，乘加 {multiply_adds:,}",
                  f"  {h} {'head' if h == 1 else 'heads'} of {width}: {parameters:,} "
                  f"parameters, {multiply_adds:,} multiply-adds"))
    print(say(f"  每个头除以 √{d_k} = {math.sqrt(d_k):g}", f"  each head divides by √{d_k} = {math.sqrt(d_k):g}"))
    return rows
