"""The quiz's key, explanations and points: instructor side only, never released.

A key is a letter (a choice), a number, or a tuple of numbers (within 0.5 each).
"""

# The answer keys live here only: never in the released notebook or the self-check.
KEY = {"quiz_1": "B", "quiz_2": "C", "quiz_3": "C", "quiz_4": "D",
       "quiz_5": (2_359_296, 2_359_296), "quiz_6": 11.3137}
# Shown in the feedback after grading, right or wrong, in the notebook's language; also
# the model answers of the written questions.
EXPLANATIONS = {
    "quiz_1": {
        "zh": "一个 softmax 把三份 V 按比例混成一份，「借」分不清谁借出、谁借到；对调人名，"
              "结果几乎不变。",
        "en": "One softmax blends the three V vectors into one, so 借 cannot tell the lender "
              "from the borrower; swapping the names barely changes the result.",
    },
    "quiz_2": {
        "zh": "按顺序拼接（头 0 在前），再乘输出矩阵 W_o：变回 d_model 宽，"
              "并让各头的信息配合。残差连接属于外面的 Transformer 层，不属于拼接。",
        "en": "Concatenated in order (head 0 first), then multiplied by W_o, which restores "
              "the width d_model and combines the heads. The residual connection belongs to the "
              "surrounding Transformer layer, not to the concat.",
    },
    "quiz_3": {
        "zh": "没有人分配：矩阵从随机开始，训练中各自学出分工，很多头还是多余的。",
        "en": "Nobody assigns them: the matrices start random and the heads specialise during "
              "training; many turn out redundant.",
    },
    "quiz_4": {
        "zh": "8 × 64 = 512：参数和乘加次数都和一个 512 宽的头相同，只是分给了 8 个"
              "各管一种关系的头。",
        "en": "8 × 64 = 512: the parameters and multiply-adds equal one head of width 512, "
              "shared by 8 heads that each track one relation.",
    },
    "quiz_5": {
        "zh": "每层 4 × 768 × 768 = 2,359,296，两种情况一样：拆成头只是把同样的列分组。"
              "12 层加起来是它的 12 倍。",
        "en": "4 × 768 × 768 = 2,359,296 per layer in both cases: splitting into heads only "
              "groups the same columns. The 12 layers together hold 12 times as many.",
    },
    "quiz_6": {
        "zh": "√128 ≈ 11.31。",
        "en": "√128 ≈ 11.31.",
    },
}
POINTS = {name: 2 for name in KEY}
NUMBER_TOLERANCE = 0.01  # a number's answer may be this far from the key
