"""One change app.legacy_cuda made to a build, as the nvcc shim records it (COMPAT_RECORD): a
compatibility header pre-included into some sources, or sources compiled as C++17 where the build
said an older dialect (DIALECT).

The shim runs as a script under the build's PATH with the standard library only (`python -IS`), so
this module imports nothing else. The shim writes each record as a JSON line (CompatRecord.as_json);
runner.toolchain.compiler.read_compat reads the lines back through CompatRecord.from_json, the run's
manifest keeps them (compat_headers) in the same JSON form, and check-config --build, the proposal
stage and the App's summary use the record itself.
"""

from __future__ import annotations

from dataclasses import dataclass

# The record's header for sources compiled as C++17 where the build said an older dialect.
DIALECT = "C++17"


@dataclass(frozen=True)
class CompatRecord:
    """A compatibility header (its file name; DIALECT for C++17) the build put into `sources` (those of
    one nvcc call, run in `cwd`), for `names` (the removed API the code calls, or the -std options
    raised)."""

    header: str
    names: tuple[str, ...]
    sources: tuple[str, ...]
    cwd: str = ""

    @property
    def is_dialect(self) -> bool:
        """Whether the record is of sources compiled as C++17 rather than of a header pre-included."""
        return self.header == DIALECT

    def as_json(self) -> dict[str, object]:
        """The record as the shim writes it and the run's manifest keeps it (a JSON object)."""
        return {"header": self.header, "names": list(self.names), "sources": list(self.sources), "cwd": self.cwd}

    @classmethod
    def from_json(cls, item: object) -> CompatRecord | None:
        """A record from its JSON object (as_json's form; `cwd` may be missing); None when `item` is
        not one: the build can write the record file too, so nothing of its shape is taken on trust."""
        if not isinstance(item, dict):
            return None
        header, names, sources, cwd = (item.get(k) for k in ("header", "names", "sources", "cwd"))
        if not isinstance(header, str) or not isinstance(cwd, str | None):
            return None
        if not (isinstance(names, list | tuple) and isinstance(sources, list | tuple)) or not all(
                isinstance(x, str) for x in (*names, *sources)):
            return None
        return cls(header, tuple(names), tuple(sources), cwd or "")
