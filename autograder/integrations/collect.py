"""The old path of mhakit.integrations.collect (see autograder/__init__.py)."""

from mhakit.integrations.collect import *  # noqa: F403 - every class a config may name

from .. import moved

moved(__name__)
