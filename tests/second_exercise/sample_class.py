"""The sample class: which answer cells each sample student fills, and with what.

Each sample starts from the released notebook (mhakit/authoring/sample_class.py).
"""

from mhakit.authoring.sample_class import edited, reference_body

from .quiz import KEY

QUIZ_ANSWERS = {f"answer_{q}": f"{q} = {key!r}" for q, key in KEY.items()}


def sample_answers(exercise):
    """{student: {answer cell id: source}}; cells not named keep the release's stub."""
    everything = {f"answer_{f}": reference_body(exercise, f) for f in exercise.function_names}
    everything.update(QUIZ_ANSWERS)
    whole_array = dict(everything)
    whole_array["answer_normalise"] = edited(  # divides by the sum of the whole array
        exercise, "normalise", "total = np.sum(x, axis=axis, keepdims=True)",
        "total = np.sum(x)")
    not_normalised = dict(everything)
    not_normalised["answer_weighted_average"] = edited(  # forgets to normalise the weights
        exercise, "weighted_average", "weighted_sum(x, normalise(w, axis=-1))",
        "weighted_sum(x, w)")
    not_normalised["answer_quiz_2"] = "quiz_2 = 50.0"  # 10 × 3 + 20 × 1, not divided by 4
    return {"alice_correct": everything, "bob_whole_array": whole_array,
            "carol_unimplemented": {}, "dan_not_normalised": not_normalised}
