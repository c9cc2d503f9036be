"""Settings: one table of every knob (settings.py), loaded from built-in defaults,
mnemoproxy.toml, MNEMO_* variables and command-line flags; docs.py writes the table into
docs/settings.md; urls.py shows a setting's URL without its credentials."""
