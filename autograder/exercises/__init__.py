"""The kit's own exercises: each folder is one (see autograder/exercise.py)."""
