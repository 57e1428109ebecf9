"""The public checks' own words, in Chinese and English. The terms follow the article:
点积 (dot product), 缩放 (scaling), 拆分 (split), 拼接 (concat), 输出矩阵 (the output matrix
W_o). The engine's words (shapes, dtypes, values, crashes) are in the self-check's."""

from mhakit.selfcheck.wording import Words

WORDS = Words({
    # the public checks' own findings
    "rows-sum-to-one": ("{what} 的每一行加起来应该是 1，实际在 {low} 到 {high} 之间",
                        "the rows of {what} should sum to 1, but they sum to values between "
                        "{low} and {high}"),
    "integer-dot": ("整数向量的点积得到了 dtype {dtype}：整数相乘再求和，NumPy 给出的是整数",
                    "integer vectors gave dtype {dtype}; NumPy's sum of integer products is "
                    "an integer"),
    "split-expected-valueerror": ("应该抛出 ValueError，但是{message}",
                                  "expected a ValueError, but {message}"),
    "split-name-both": ("ValueError 的说明里要写出 d_model（10）和 num_heads（4）",
                        "the ValueError should name d_model (10) and num_heads (4)"),
    "split-returned": ("split_heads(X, d_model=10, num_heads=4) 正常返回了；10 列没法平均拆分成 "
                       "4 个头，应该抛出 ValueError",
                       "split_heads(X with d_model=10, num_heads=4) returned; it should raise "
                       "ValueError, since 10 columns do not split into 4 equal heads"),
    # the quiz
    "quiz-not-started": ("测验还没有作答", "the quiz is not answered yet"),
    "quiz-unanswered": ("还没有作答：{names}", "not answered yet: {names}"),
    "quiz-choice": ("{question} 应该是 {choices} 之一", "{question} should be one of {choices}"),
    "quiz-pair": ("quiz_5 应该是两个数：(一层 12 个头的参数量, 一层 1 个头的参数量)",
                  "quiz_5 should be a pair of numbers, for one layer: (with 12 heads, with "
                  "1 head)"),
    "quiz-number": ("quiz_6 应该是一个数", "quiz_6 should be a number"),
})
say = WORDS.say
