"""Attacks on feedback: see tests/attack_corpus.py for how an Attack is graded."""

from .attack_corpus import Attack  # noqa: F401

FEEDBACK_ATTACKS = []
