"""The public checks' own words, in Chinese and English. The engine's words (shapes,
dtypes, values, crashes) are in the self-check's."""

from mhakit.selfcheck.wording import Words

WORDS = Words({
    "sums-to-one": ("{what} 沿 axis 加起来应该是 1，实际在 {low} 到 {high} 之间",
                    "{what} should sum to 1 along the axis, but its sums lie between {low} "
                    "and {high}"),
    "quiz-not-started": ("测验还没有作答", "the quiz is not answered yet"),
    "quiz-unanswered": ("还没有作答：{names}", "not answered yet: {names}"),
    "quiz-choice": ("quiz_1 应该是 {choices} 之一", "quiz_1 should be one of {choices}"),
    "quiz-number": ("quiz_2 应该是一个数", "quiz_2 should be a number"),
})
say = WORDS.say
