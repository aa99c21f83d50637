"""The kernel executions of a traced process, stored column-wise.

A training program launches millions of kernels: one model object per launch took some hundred
bytes of Python objects each and most of the reading time (issue #44 item 9). `Launches` keeps one
numpy array per field and the kernels' names once; it is still a sequence of `KernelLaunch` for the
callers that look at a few launches, and answers the totals the stages need without a Python loop.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import overload

import numpy as np
from pydantic import BaseModel

# The integer fields of a launch, each one int64 column.
INT_FIELDS = ("start_ns", "end_ns", "registers", "static_shared", "dynamic_shared", "stream", "device", "context",
              "correlation", "graph")


class KernelLaunch(BaseModel):
    """One kernel execution, as CUPTI's activity record reports it."""

    kernel: str  # demangled by the C++ runtime (ncu spells template arguments differently)
    mangled: str
    start_ns: int
    end_ns: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    registers: int
    static_shared: int
    dynamic_shared: int
    stream: int
    device: int
    context: int
    correlation: int
    graph: int = 0  # the CUDA graph it ran in, 0 when launched directly

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


def _dims(values: np.ndarray, n: int) -> np.ndarray:
    """An (n, 3) int64 array of grid or block dimensions."""
    return np.asarray(values, dtype=np.int64).reshape(n, 3)


class Launches(Sequence[KernelLaunch]):
    """Kernel executions in one table: `names` the distinct (demangled, mangled) kernels, `kernel_ids`
    each launch's index into them, `grid` and `block` (n, 3) arrays, one int64 array per INT_FIELDS."""

    __slots__ = ("block", "columns", "grid", "kernel_ids", "names")

    def __init__(self, names: list[tuple[str, str]], kernel_ids: np.ndarray, grid: np.ndarray, block: np.ndarray,
                 columns: dict[str, np.ndarray]) -> None:
        n = len(kernel_ids)
        self.names = names
        self.kernel_ids = np.asarray(kernel_ids, dtype=np.int32)
        self.grid, self.block = _dims(grid, n), _dims(block, n)
        self.columns = {f: np.asarray(columns[f], dtype=np.int64).reshape(n) for f in INT_FIELDS}

    @classmethod
    def empty(cls) -> Launches:
        return cls.of([])

    @classmethod
    def of(cls, launches: Iterable[KernelLaunch | dict]) -> Launches:
        """The table of these launches (model objects, or their fields as a dict), in their order."""
        rows = [k if isinstance(k, KernelLaunch) else KernelLaunch.model_validate(k) for k in launches]
        index: dict[tuple[str, str], int] = {}
        ids = [index.setdefault((k.kernel, k.mangled), len(index)) for k in rows]
        return cls(list(index), np.array(ids, dtype=np.int32), np.array([k.grid for k in rows], dtype=np.int64),
                   np.array([k.block for k in rows], dtype=np.int64),
                   {f: np.array([getattr(k, f) for k in rows], dtype=np.int64) for f in INT_FIELDS})

    @classmethod
    def concat(cls, parts: Sequence[Launches]) -> Launches:
        """Several tables one after the other (the processes of one run)."""
        if not parts:
            return cls.empty()
        index: dict[tuple[str, str], int] = {}
        ids = []
        for p in parts:
            remap = np.array([index.setdefault(name, len(index)) for name in p.names] or [0], dtype=np.int32)
            ids.append(remap[p.kernel_ids])
        return cls(list(index), np.concatenate(ids), np.concatenate([p.grid for p in parts]),
                   np.concatenate([p.block for p in parts]),
                   {f: np.concatenate([p.columns[f] for p in parts]) for f in INT_FIELDS})

    def __len__(self) -> int:
        return len(self.kernel_ids)

    @overload
    def __getitem__(self, i: int) -> KernelLaunch: ...

    @overload
    def __getitem__(self, i: slice) -> Launches: ...

    def __getitem__(self, i: int | slice) -> KernelLaunch | Launches:
        if isinstance(i, slice):
            return self.take(np.arange(len(self))[i])
        if not -len(self) <= i < len(self):
            raise IndexError(f"launch {i} of {len(self)}")
        kernel, mangled = self.names[self.kernel_ids[i]]
        return KernelLaunch.model_construct(
            kernel=kernel, mangled=mangled, grid=tuple(self.grid[i].tolist()), block=tuple(self.block[i].tolist()),
            **{f: int(self.columns[f][i]) for f in INT_FIELDS})

    def __iter__(self) -> Iterator[KernelLaunch]:
        return (self[i] for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str) or len(other) != len(self):
            return False
        return all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # mutable arrays

    def __repr__(self) -> str:
        return f"Launches({len(self)} launches of {len(self.names)} kernels)"

    def take(self, order: np.ndarray) -> Launches:
        """The launches at these positions, in that order."""
        return Launches(self.names, self.kernel_ids[order], self.grid[order], self.block[order],
                        {f: c[order] for f, c in self.columns.items()})

    def by_start(self) -> Launches:
        """The launches in the order they started (stable: equal starts keep their order)."""
        start = self.columns["start_ns"]
        if len(start) < 2 or bool(np.all(start[1:] >= start[:-1])):
            return self
        return self.take(np.argsort(start, kind="stable"))

    def duration_ns(self) -> np.ndarray:
        """Each launch's duration (end - start), int64."""
        return self.columns["end_ns"] - self.columns["start_ns"]

    def kernel(self) -> np.ndarray:
        """Each launch's demangled kernel name (an object array of the shared name strings)."""
        return np.array([n[0] for n in self.names] or [""], dtype=object)[self.kernel_ids]

    def mangled(self) -> np.ndarray:
        """Each launch's kernel symbol (an object array of the shared strings)."""
        return np.array([n[1] for n in self.names] or [""], dtype=object)[self.kernel_ids]

    def _first_and_last(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The kernel ids that launched, each one's first and last position."""
        ids = self.kernel_ids
        used, first = np.unique(ids, return_index=True)
        _, from_end = np.unique(ids[::-1], return_index=True)
        return used, first, len(ids) - 1 - from_end

    def kernel_ns(self) -> dict[str, int]:
        """Total execution time per kernel (demangled name), in ns, in the order they first ran."""
        sums = np.zeros(len(self.names), dtype=np.int64)
        np.add.at(sums, self.kernel_ids, self.duration_ns())
        used, first, _ = self._first_and_last()
        total: dict[str, int] = {}
        for k in used[np.argsort(first, kind="stable")]:
            name = self.names[k][0]
            total[name] = total.get(name, 0) + int(sums[k])
        return total

    def symbols(self) -> dict[str, str]:
        """Each kernel's symbol (demangled name -> mangled name; of its last launch, where two
        symbols demangle alike), in the order the kernels first ran."""
        used, first, last = self._first_and_last()
        out: dict[str, str] = {}
        for k in used[np.argsort(first, kind="stable")]:
            out.setdefault(self.names[k][0], "")
        latest: dict[str, int] = {}
        for k, at in zip(used.tolist(), last.tolist(), strict=True):
            name = self.names[k][0]
            if at >= latest.get(name, -1):
                latest[name], out[name] = at, self.names[k][1]
        return out
