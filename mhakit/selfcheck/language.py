"""The notebook's language. The build writes this file anew for each released assignment."""

LANGUAGE = "zh"
