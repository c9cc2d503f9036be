"""Scripts run by hand: generated files and whole-data checks."""
