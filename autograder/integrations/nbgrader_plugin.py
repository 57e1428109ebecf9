"""The old path of mhakit.integrations.nbgrader_plugin (see autograder/__init__.py)."""

from mhakit.integrations.nbgrader_plugin import *  # noqa: F403 - every class a config may name

from .. import moved

moved(__name__)
