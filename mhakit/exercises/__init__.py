"""The kit's own exercises: each folder is one (see mhakit/exercise.py)."""
