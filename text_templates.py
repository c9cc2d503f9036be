"""Jinja2 templates that render text for a model (prompts, the memory block), not HTML."""

from __future__ import annotations

from pathlib import Path

import jinja2


def text_templates(folder: Path) -> jinja2.Environment:
    """An environment over `folder`: no HTML escaping (the output is a prompt), undefined
    names are errors, and block tags leave no blank lines behind."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(folder),
        autoescape=False,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
