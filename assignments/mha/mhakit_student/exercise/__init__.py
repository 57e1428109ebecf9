"""The exercise's half of the self-check, shipped to students: the public checks, and the
story, demonstrations and plots the lesson's cells call. numpy only (matplotlib for the
plots); its modules import the self-check as their parent package."""

from .checks import CHECKS, KNOWN

__all__ = ["CHECKS", "KNOWN"]
