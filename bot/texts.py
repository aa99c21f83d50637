"""What the bot says in its replies, from the templates in templates/bot/ (the repository's one place
for what the model and the maintainer read; shipped in the package as runner/templates)."""

from __future__ import annotations

from pathlib import Path

import jinja2

import runner

TEMPLATES = Path(runner.__file__).resolve().parent / "templates" / "bot"
# Markdown for GitHub, not HTML: nothing is escaped, and every value put in is one the bot checked
# (logins, repository names and SHAs as GitHub spells them, settings)
_ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined,
                          autoescape=False)


def text(name: str, **values: object) -> str:
    """One reply: templates/bot/<name>.md.j2 rendered with `values`, its line breaks inside
    paragraphs joined (the templates wrap for reading; GitHub would keep the breaks)."""
    rendered = _ENV.get_template(f"{name}.md.j2").render(**values).strip()
    paragraphs = rendered.split("\n\n")
    return "\n\n".join(p if p.lstrip().startswith("- ") else " ".join(p.splitlines()) for p in paragraphs)
