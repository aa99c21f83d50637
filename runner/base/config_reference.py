"""The configuration reference (docs/configuration.md), generated from the config schema: every key
with its type, allowed values and default from runner.base.config, and its description from the
schema or, where the schema has none, from the comment beside the key in the shipped config.yml.

    python -m runner.base.config_reference > docs/configuration.md

A test fails when the committed reference is out of date.
"""

from __future__ import annotations

import re
import sys
from importlib import resources
from typing import Any

from runner.base.config import Config

SECTIONS = {"app": "The application under optimization", "profiles": "Recorded Nsight Compute exports",
            "analysis": "The Analysis Agent", "profiling": "The Profiling Agent",
            "llm": "The model", "evaluation": "The evaluation stage (build, validate, time)",
            "runs_dir": "Where run folders go",
            "programs": "A repository's programs (each entry: the `app` keys that differ for it)",
            "programs_per_pull_request": "How many programs one pull request profiles"}


def config_comments(text: str) -> dict[str, str]:
    """The comment beside each key of a YAML file written like config.yml (`key: value  # text`,
    continued on the next lines by comments indented past the key), by dotted key path."""
    comments: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    last: str | None = None
    last_indent = -1
    for line in text.splitlines():
        m = re.match(r"^( *)([A-Za-z_][\w-]*):(.*)$", line)
        if m:
            indent, key, rest = len(m.group(1)), m.group(2), m.group(3)
            while stack and stack[-1][0] >= indent:
                stack.pop()
            path = ".".join([k for _, k in stack] + [key])
            stack.append((indent, key))
            value, _, comment = _split_comment(rest)
            if comment:
                comments[path] = comment
            last, last_indent = path, indent
            continue
        c = re.match(r"^( +)#\s?(.*)$", line)
        if c and last is not None and len(c.group(1)) > last_indent and last in comments:
            comments[last] += " " + c.group(2).strip()
        elif line.strip() and not line.lstrip().startswith("#"):
            last = None  # a list item or a value continued: no comment continues past it
    return comments


def _split_comment(rest: str) -> tuple[str, str, str]:
    """(value, '#', comment) of the text after `key:`, outside quotes."""
    quote = None
    for i, ch in enumerate(rest):
        if ch in "\"'" and quote in (None, ch):
            quote = None if quote else ch
        elif ch == "#" and quote is None and (i == 0 or rest[i - 1] in " \t"):
            return rest[:i].strip(), "#", rest[i + 1:].strip()
    return rest.strip(), "", ""


def _choices(spec: dict, defs: dict) -> list | None:
    """The values a key takes when it is a choice among named values (an enum, a constant, a
    reference to an enum, or any of these); None when it is not."""
    if "$ref" in spec:
        spec = defs[spec["$ref"].split("/")[-1]]
    if "enum" in spec:
        return list(spec["enum"])
    if "const" in spec:
        return [spec["const"]]
    if "anyOf" in spec:
        parts = [_choices(s, defs) for s in spec["anyOf"]]
        return None if any(p is None for p in parts) else [v for p in parts if p is not None for v in p]
    return None


def _type(spec: dict, defs: dict) -> str:
    choices = _choices(spec, defs)
    if choices is not None:
        return " \\| ".join(f"`{v}`" for v in choices)
    if "$ref" in spec:
        return defs[spec["$ref"].split("/")[-1]].get("title", "object")
    if "anyOf" in spec:
        return " or ".join(_type(s, defs) for s in spec["anyOf"])
    t = spec.get("type", "any")
    if t == "array":
        return f"list of {_type(spec.get('items', {}), defs)}"
    if t == "object":
        extra = spec.get("additionalProperties")
        return f"mapping to {_type(extra, defs)}" if isinstance(extra, dict) else "mapping"
    bounds = [f"{op} {spec[k]}" for k, op in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="),
                                               ("exclusiveMaximum", "<")) if k in spec]
    return t + (f" ({', '.join(bounds)})" if bounds else "")


def _default(value: Any) -> str:
    if value is None:
        return "null"
    if value == [] or value == {}:
        return "empty"
    text = repr(value) if not isinstance(value, str) else value
    return f"`{text}`" if len(text) <= 60 else f"`{text[:57]}...`"


def reference(comments: dict[str, str] | None = None) -> str:
    """The reference as Markdown."""
    if comments is None:
        comments = config_comments(resources.files("runner").joinpath("data/demo/config.yml").read_text())
    schema = Config.model_json_schema()
    defs = schema.get("$defs", {})
    defaults = Config().model_dump()
    out = ["# Configuration reference", "",
           "Generated from the config schema (`python -m runner.base.config_reference > docs/configuration.md`; "
           "a test fails when this file is out of date). Every key is optional; unknown keys, wrong types and "
           "out-of-range values stop with exit code 2. `config.yml` in the repository sets every key, with the "
           "demo app's values in `app` and `profiles`.", ""]
    for section, spec in schema["properties"].items():
        out += [f"## `{section}`: {SECTIONS.get(section, '')}", "", "| key | type | default | meaning |",
                "|---|---|---|---|"]
        rows = []
        _rows(section, spec, defs, defaults.get(section), comments, rows)
        out += rows + [""]
    return "\n".join(out)


def _rows(path: str, spec: dict, defs: dict, default: Any, comments: dict[str, str], rows: list[str]) -> None:
    target = defs[spec["$ref"].split("/")[-1]] if "$ref" in spec else spec
    if target.get("type") == "object" and "properties" in target:
        for key, sub in target["properties"].items():
            _rows(f"{path}.{key}", sub, defs, (default or {}).get(key), comments, rows)
        return
    items = spec.get("items", {})
    if spec.get("type") == "array" and "$ref" in items:  # a list of objects: each object's keys too
        meaning = spec.get("description") or comments.get(path, "")
        rows.append(f"| `{path}` | {_type(spec, defs)} | {_default(default)} | {meaning.replace('|', chr(92) + '|')} |")
        if path == "programs":  # each entry takes app's keys, listed under `app`
            return
        item = defs[items["$ref"].split("/")[-1]]
        for key, sub in item.get("properties", {}).items():
            _rows(f"{path}[].{key}", sub, defs, sub.get("default"), comments, rows)
        return
    meaning = spec.get("description") or comments.get(path, "")
    meaning = meaning.replace("|", "\\|").replace("\n", " ")
    rows.append(f"| `{path}` | {_type(spec, defs)} | {_default(default)} | {meaning} |")


if __name__ == "__main__":
    sys.stdout.write(reference() + "\n")
