"""Attacks on the class: see tests/attack_corpus.py for how an Attack is graded."""

from .attack_corpus import Attack  # noqa: F401

CLASS_ATTACKS = []
