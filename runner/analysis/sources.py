"""Which version of the code a profile saw: per hot kernel, a digest of the source lines its PC
samples fell on, as the report imported them at capture time. Evidence cites line numbers; when
the local file no longer holds the same text at those lines, the evidence belongs to other code
and must not reach a prompt.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Callable

from pydantic import BaseModel

from runner.profiles.model import Profile, short_kernel_name


class SourceDigest(BaseModel):
    """The sampled lines of one kernel in one file, and a hash of their text."""

    kernel: str
    file: str  # as the profile names it (after app.source_map)
    lines: list[int]
    sha256: str


def digest(texts: list[str]) -> str:
    """SHA-256 of source lines, each with its whitespace folded (ncu re-indents nothing, editors might)."""
    h = hashlib.sha256()
    for t in texts:
        h.update(" ".join(str(t).split()).encode() + b"\n")
    return h.hexdigest()


def source_digests(profile: Profile, kernels: list[str]) -> list[SourceDigest]:
    """One digest per (hot kernel, file) over the lines with PC samples that have source text."""
    out: list[SourceDigest] = []
    lines = profile.lines
    if lines.empty:
        return out
    for k in kernels:
        rows = lines[(lines["kernel"] == k) & (lines["samples"] > 0) & lines["file"].notna() & lines["source"].notna()]
        for file, group in rows.groupby("file", sort=True):
            group = group.drop_duplicates("line").sort_values("line")
            out.append(SourceDigest(kernel=k, file=str(file), lines=[int(x) for x in group["line"]],
                                    sha256=digest(list(group["source"]))))
    return out


def stale_sources(digests: list[SourceDigest], files: dict[str, str],
                  resolve: Callable[[str], str | None]) -> list[str]:
    """What no longer matches: for each digest whose file is among `files` (found by `resolve`,
    which maps a profile's file name to a key of `files`, or None), a message naming the kernel,
    the file and the cited lines (the digest says that they differ, not which)."""
    problems = []
    for d in digests:
        name = resolve(d.file)
        if name is None:
            continue
        local = files[name].splitlines()
        texts = [local[n - 1] if 0 < n <= len(local) else "" for n in d.lines]
        if digest(texts) == d.sha256:
            continue
        problems.append(f"{short_kernel_name(d.kernel)}: the profile's source of {name} differs from the file now "
                        f"(the evidence cites lines {_ranges(d.lines)})")
    return problems


def resolver(local: dict[str, str], absolute: Callable[[str], str]) -> Callable[[str], str | None]:
    """Map a profile's file name to a local file's name: the same absolute path (`local` maps
    absolute paths to names; `absolute` makes a profile's name absolute), else the only local file
    with that base name (profiles name files by the path they had on the profiling machine)."""
    by_base: dict[str, list[str]] = {}
    for name in local.values():
        by_base.setdefault(posixpath.basename(name), []).append(name)

    def resolve(profile_file: str) -> str | None:
        hit = local.get(absolute(profile_file))
        if hit:
            return hit
        same = by_base.get(posixpath.basename(profile_file.replace("\\", "/")), [])
        return same[0] if len(same) == 1 else None

    return resolve


def _ranges(lines: list[int]) -> str:
    out, start, prev = [], None, None
    for n in lines:
        if start is None:
            start = prev = n
        elif n == prev + 1:
            prev = n
        else:
            out.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = n
    if start is not None:
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ", ".join(out)
