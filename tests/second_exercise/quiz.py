"""The quiz's key, explanations and points: instructor side only, never released.

A key is a letter (a choice) or a number.
"""

KEY = {"quiz_1": "B", "quiz_2": 12.5}
EXPLANATIONS = {
    "quiz_1": {
        "zh": "normalise 会除以权重之和，所以所有权重乘同一个数，结果不变。",
        "en": "normalise divides by the sum of the weights, so multiplying every weight by "
              "the same number changes nothing.",
    },
    "quiz_2": {
        "zh": "权重 [3, 1] 归一化后是 [0.75, 0.25]，0.75 × 10 + 0.25 × 20 = 12.5。",
        "en": "The weights [3, 1] normalise to [0.75, 0.25], and 0.75 × 10 + 0.25 × 20 = "
              "12.5.",
    },
}
POINTS = {name: 2 for name in KEY}
NUMBER_TOLERANCE = 0.01
