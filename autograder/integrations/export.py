"""The old path of mhakit.integrations.export (see autograder/__init__.py)."""

from mhakit.integrations.export import *  # noqa: F403 - every class a config may name

from .. import moved

moved(__name__)
