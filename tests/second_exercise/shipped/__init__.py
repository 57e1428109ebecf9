"""The exercise's half of the self-check, shipped to students: its public checks. numpy
only; its modules import the self-check as their parent package."""

from .checks import CHECKS

__all__ = ["CHECKS"]
