"""Golden tests: Inputs/ holds op files and data that cases use; it is never collected."""

collect_ignore = ["Inputs"]
