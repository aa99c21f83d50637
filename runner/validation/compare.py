"""How two runs' results compare, for the Evaluation Agent's validation and the Profiling Agent's
check of the original: output files (bit for bit, or within declared tolerances), and the
device-to-host results the CUPTI tracer recorded (bit for bit, within tolerances, or within
rounding where the original's own results vary run to run).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import NamedTuple

import numpy as np

from runner.base.config import GpuResultsSpec, OutputSpec
from runner.base.validation_modes import ValidationMode
from runner.tracing.trace import DeviceResult, ProcessTrace, ResultsVariation

# A mismatch whose values all lie within this many ulps of the baseline's reads as the same
# computation rounded otherwise (a reordered sum, a multiply-add fused or no longer fused), not as
# a wrong result.
ROUNDING_ULPS = 1024
# Kept in bitwise mode to describe a mismatch, by validation and by the profiling agent's second run:
# the first MISMATCH_EACH bytes of every result, up to MISMATCH_BYTES per process (a prefix of the
# whole would miss a small result read after large ones).
MISMATCH_BYTES = 32 << 20
MISMATCH_EACH = 4 << 20


class Difference(NamedTuple):
    """How two results compare: equal enough, why not, and the largest ulp distance of a differing
    value when their bytes read as floating-point values differ (None otherwise)."""

    ok: bool
    why: str = ""
    max_ulps: int | None = None


def _values(data: bytes, spec: OutputSpec) -> list[np.ndarray]:
    """The numbers of an output file, per section ('optimas' format) or as one array ('raw')."""
    if spec.format == "raw":
        return [np.frombuffer(data[: len(data) - len(data) % np.dtype(spec.dtype).itemsize], dtype=spec.dtype)]
    kinds = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "u8": np.uint8}
    out, pos = [], data.index(b"\n") + 1  # skip the "OPTIMAS-OUTPUT 1" line
    while pos < len(data):
        end = data.index(b"\n", pos)
        _, dtype, count = data[pos:end].decode().split()
        dt = np.dtype(kinds[dtype])
        n = int(count) * dt.itemsize
        out.append(np.frombuffer(data[end + 1:end + 1 + n], dtype=dt))
        pos = end + 1 + n
    return out


def _ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ints = {np.dtype(np.float32): np.int32, np.dtype(np.float64): np.int64}[a.dtype]
    ia, ib = a.view(ints).astype(np.int64), b.view(ints).astype(np.int64)
    # Map sign-magnitude to a monotonic integer line so that neighbouring floats differ by 1.
    mask = np.int64(np.iinfo(ints).max)
    ia = np.where(ia < 0, -(ia & mask), ia)
    ib = np.where(ib < 0, -(ib & mask), ib)
    return np.abs(ia - ib)


class Kept(NamedTuple):
    """One result of two runs whose bytes differ (by hash), as a comparator reads it: `what` names it,
    the bytes kept of each run's version, whether both were kept whole, and whose the baseline is."""

    what: str
    candidate: bytes
    baseline: bytes
    whole: bool
    other: str = "the baseline"


class Comparator(NamedTuple):
    """One validation mode's comparison: of an output file's two versions (`file`: under the
    output's rule), and of a GPU result whose bytes differ between two runs (`result`: under the
    GPU results' rule, the words naming it included)."""

    file: Callable[[bytes, bytes, OutputSpec], Difference]
    result: Callable[[Kept, OutputSpec], Difference]


def _bitwise_file(candidate: bytes, baseline: bytes, spec: OutputSpec) -> Difference:
    """Bit for bit: where the bytes first differ."""
    if candidate == baseline:
        return Difference(True)
    diff = _first_differing_byte(candidate, baseline)
    diff = min(len(candidate), len(baseline)) if diff is None else diff
    return Difference(False, f"bytes differ from offset {diff} ({len(candidate)} vs {len(baseline)} bytes)")


def _bitwise_result(kept: Kept, rule: OutputSpec) -> Difference:
    """A GPU result differs bit for bit: where, and by how much read as the rule's dtype."""
    where, max_ulps = first_difference(kept.candidate, kept.baseline, rule.dtype, kept.other)
    return Difference(False, f"{kept.what} differs from {kept.other}'s{where}", max_ulps)


def _tolerance_file(candidate: bytes, baseline: bytes, spec: OutputSpec) -> Difference:
    """Within the output's tolerances: every value within atol + rtol * |baseline|, or `ulps` units
    in the last place (NaN equals NaN; integer sections bit for bit)."""
    if candidate == baseline:
        return Difference(True)
    try:
        cand, base = _values(candidate, spec), _values(baseline, spec)
    except (ValueError, KeyError) as e:
        return Difference(False, f"cannot read the values ({e})")
    if len(cand) != len(base) or any(len(c) != len(b) for c, b in zip(cand, base, strict=True)):
        return Difference(False, "different number of values")
    for k, (c, b) in enumerate(zip(cand, base, strict=True)):
        if c.dtype.kind != "f":
            if not np.array_equal(c, b):
                return Difference(False, f"section {k}: integer values differ")
            continue
        cd, bd = c.astype(np.float64), b.astype(np.float64)
        close = np.abs(cd - bd) <= spec.atol + spec.rtol * np.abs(bd)
        if spec.ulps:
            close |= _ulp_distance(c, b) <= spec.ulps
        close |= (np.isnan(cd) & np.isnan(bd))
        if not close.all():
            i = int(np.argmin(close))
            return Difference(False, f"section {k}, value {i}: {c[i]!r} vs {b[i]!r} beyond rtol={spec.rtol} "
                                     f"atol={spec.atol} ulps={spec.ulps}")
    return Difference(True)


def _tolerance_result(kept: Kept, rule: OutputSpec) -> Difference:
    """A differing GPU result within the tolerances, which needs both versions kept whole."""
    if not kept.whole:
        return Difference(False, f"{kept.what} differs from {kept.other}'s and only "
                                 f"{min(len(kept.candidate), len(kept.baseline))} of its "
                                 "bytes were kept for the tolerance check (app.gpu_results.keep_bytes)")
    d = _tolerance_file(kept.candidate, kept.baseline, rule)
    return d if d.ok else Difference(False, f"{kept.what}: {d.why}")


def _unchecked_file(candidate: bytes, baseline: bytes, spec: OutputSpec) -> Difference:
    """Not compared: any two versions pass."""
    return Difference(True)


def _unchecked_result(kept: Kept, rule: OutputSpec) -> Difference:
    """Not compared: any two versions pass."""
    return Difference(True)


# One comparator per validation mode.
COMPARATORS: Mapping[ValidationMode, Comparator] = MappingProxyType({
    ValidationMode.BITWISE: Comparator(_bitwise_file, _bitwise_result),
    ValidationMode.TOLERANCE: Comparator(_tolerance_file, _tolerance_result),
    ValidationMode.OFF: Comparator(_unchecked_file, _unchecked_result),
})


def compare(candidate: bytes, baseline: bytes, spec: OutputSpec) -> tuple[bool, str]:
    """(equal enough, why not) under the output's comparison mode."""
    d = COMPARATORS[ValidationMode(spec.compare)].file(candidate, baseline, spec)
    return d.ok, d.why


def _first_differing_byte(a: bytes, b: bytes) -> int | None:
    """The offset of the first byte where a and b differ, over their common length (None: none)."""
    n = min(len(a), len(b))
    at = np.flatnonzero(np.frombuffer(a, np.uint8, n) != np.frombuffer(b, np.uint8, n))
    return int(at[0]) if at.size else None


def first_difference(candidate: bytes, baseline: bytes, dtype: str, other: str = "the baseline"
                     ) -> tuple[str, int | None]:
    """Where two results' kept bytes first differ and, read as `dtype`, by how much (a rounding
    difference in the last bits reads otherwise than a wrong value): the words, and the largest
    ulp distance when the differing values are floating-point data (None when not, or unknown)."""
    n = min(len(candidate), len(baseline))
    if n == 0:
        return " (none of its bytes were kept to say where)", None
    first = _first_differing_byte(candidate, baseline)
    if first is None:
        return f" (not in its first {n} bytes, the part kept)", None
    size = np.dtype(dtype).itemsize
    m = n // size * size
    if first >= m:
        return f", from byte {first}", None
    cv, bv = np.frombuffer(candidate[:m], dtype), np.frombuffer(baseline[:m], dtype)
    ints = {4: np.uint32, 8: np.uint64}[size]
    differ = cv.view(ints) != bv.view(ints)
    ulps = _ulp_distance(cv[differ], bv[differ])
    k = first // size
    # Integers read as floats are subnormal (up to 2**23 for float32): their "ulps" are a count's
    # difference, not rounding; said so, and then no ulp distance is given.
    tiny = np.finfo(dtype).tiny
    integral = bool(np.all(np.abs(cv[differ]) < tiny) and np.all(np.abs(bv[differ]) < tiny))
    text = (f", from byte {first}: read as {dtype}, value {k} is {cv[k]!s} where {other} has {bv[k]!s}; "
            f"{int(differ.sum())} of {len(cv)} values differ, by {int(ulps.min())} to {int(ulps.max())} ulps"
            + (f" (all subnormal: probably not {dtype} data)" if integral else ""))
    return text, None if integral else int(ulps.max())


Paired = list[tuple[int, tuple[ProcessTrace, DeviceResult], tuple[ProcessTrace, DeviceResult]]]


def _paired(candidate: list[ProcessTrace], baseline: list[ProcessTrace], other: str) -> Paired | Difference:
    """Two runs' results side by side in program order, numbered from 1, where their bytes differ
    (by hash); a Difference when their number or a result's size differs."""
    cand = [(t, r) for t in candidate for r in t.results]
    base = [(t, r) for t in baseline for r in t.results]
    if len(cand) != len(base):
        return Difference(False, f"{len(cand)} results read back from the GPU where {other} reads {len(base)}")
    out = []
    for i, (c, b) in enumerate(zip(cand, base, strict=True), start=1):
        if c[1].bytes != b[1].bytes:
            return Difference(False, f"GPU result {i} ({b[1].source}) has {c[1].bytes} bytes where {other}'s has "
                                     f"{b[1].bytes}")
        if c[1].hash != b[1].hash:
            out.append((i, c, b))
    return out


def compare_results(candidate: list[ProcessTrace], baseline: list[ProcessTrace], spec: GpuResultsSpec,
                    mode: ValidationMode, other: str = "the baseline") -> Difference:
    """How two runs' device-to-host results compare under `mode` (its COMPARATORS entry), in program
    order; `other` names the run compared against in the reason."""
    paired = _paired(candidate, baseline, other)
    if isinstance(paired, Difference):
        return paired
    comparator = COMPARATORS[ValidationMode(mode)]
    rule = OutputSpec(path="gpu result", compare=ValidationMode.TOLERANCE, format="raw", dtype=spec.dtype,
                      rtol=spec.rtol, atol=spec.atol, ulps=spec.ulps)
    for i, (ct, cr), (bt, br) in paired:
        kept = Kept(f"GPU result {i} ({br.source}, {br.bytes} bytes)", ct.kept_bytes(cr), bt.kept_bytes(br),
                    cr.kept >= cr.bytes and br.kept >= br.bytes, other)
        d = comparator.result(kept, rule)
        if not d.ok:
            return d
    return Difference(True)


def float_distance(a: bytes, b: bytes, dtype: str) -> int | None:
    """The largest ulp distance between two equal-length results' values read as `dtype`; None
    when they cannot be read so or a differing value is infinite, NaN against a number, or
    subnormal (integers read as floats are). 0 when they do not differ; NaN equals NaN."""
    size = np.dtype(dtype).itemsize
    if len(a) != len(b) or len(a) % size:
        return None
    va, vb = np.frombuffer(a, dtype), np.frombuffer(b, dtype)
    ints = {4: np.uint32, 8: np.uint64}[size]
    differ = (va.view(ints) != vb.view(ints)) & ~(np.isnan(va) & np.isnan(vb))
    if not differ.any():
        return 0
    x, y = va[differ], vb[differ]
    tiny = np.finfo(dtype).tiny
    if not (np.isfinite(x).all() and np.isfinite(y).all()) or ((x != 0) & (np.abs(x) < tiny)).any() \
            or ((y != 0) & (np.abs(y) < tiny)).any():
        return None
    return int(_ulp_distance(x, y).max())


def rounding_ulps(a: bytes, b: bytes, dtype: str) -> int | None:
    """float_distance when it is at most ROUNDING_ULPS (the values differ by rounding only), else None."""
    d = float_distance(a, b, dtype)
    return d if d is not None and d <= ROUNDING_ULPS else None


class RoundingSpread(NamedTuple):
    """Where and by how much two runs of the original differ when only by rounding: each varying
    result's number (from 1) and the float type it reads as, and the largest ulp distance."""

    dtypes: dict[int, str]
    ulps: int


def rounding_type(a: bytes, b: bytes) -> tuple[str, int] | None:
    """The float type under which two versions of a result differ by rounding only, and by how many
    ulps; None when under neither. Read as float32 pairs, doubles whose low words stay the same
    (round values) would let a change of 1e-3 in a high word pass as 1000 ulps. So float64 is tried
    first, and float32 is taken for a result that could hold doubles only when some of its
    even-numbered (low-word) values differ too: float32 data read as float64 is never judged more
    leniently, a change in its odd-numbered values being 2**32 double ulps or more."""
    d64 = float_distance(a, b, "float64")
    if d64 is not None and d64 <= ROUNDING_ULPS:
        return "float64", d64
    d32 = rounding_ulps(a, b, "float32")
    if d32 is None:
        return None
    if len(a) % 8 == 0:
        low = np.frombuffer(a, np.uint32)[::2] != np.frombuffer(b, np.uint32)[::2]
        if not low.any():
            return None  # only high words differ: doubles, by more than rounding
    return "float32", d32


def original_spread(first: list[ProcessTrace], second: list[ProcessTrace]) -> RoundingSpread | str:
    """How the original's two runs' GPU results differ when every differing result, kept whole,
    differs by rounding only (rounding_type); else why not, in words."""
    paired = _paired(second, first, "its first run")
    if isinstance(paired, Difference):
        return paired.why
    dtypes, worst = {}, 0
    for i, (st, sr), (ft, fr) in paired:
        if sr.kept < sr.bytes or fr.kept < fr.bytes:
            return f"only {min(sr.kept, fr.kept)} of the {fr.bytes} bytes of GPU result {i} were kept to compare"
        found = rounding_type(st.kept_bytes(sr), ft.kept_bytes(fr))
        if found is None:
            return f"GPU result {i} ({fr.source}) differs by more than rounding"
        dtypes[i], worst = found[0], max(worst, found[1])
    return RoundingSpread(dtypes, worst)


def results_variation(first: list[ProcessTrace], again: list[ProcessTrace]) -> ResultsVariation:
    """How a second run of the original compares with its first in its GPU results, bit for bit:
    the same, differing by rounding only (original_spread), or otherwise (and how)."""
    diff = compare_results(again, first, GpuResultsSpec(), ValidationMode.BITWISE, "its first run")
    if diff.ok:
        return ResultsVariation(varies=False)
    spread = original_spread(first, again)
    if isinstance(spread, RoundingSpread):
        return ResultsVariation(varies=True, rounding_ulps=spread.ulps, why=diff.why)
    return ResultsVariation(varies=True, why=f"{diff.why}; {spread}")


def repeated_but_different(candidate: list[ProcessTrace], baseline: list[ProcessTrace],
                           spread: RoundingSpread) -> set[int]:
    """The numbers of the results that the original repeated bit for bit in the runs `spread` came
    from (so it holds them to their bits) and the candidate's differ in; empty when the two runs
    cannot be paired (within_rounding says why)."""
    paired = _paired(candidate, baseline, "the baseline")
    return set() if isinstance(paired, Difference) else {i for i, _, _ in paired if i not in spread.dtypes}


def widened(spread: RoundingSpread, more: RoundingSpread) -> RoundingSpread:
    """Two spreads of the original's runs against the same first run as one: every result that
    varied in either, by the larger distance."""
    return RoundingSpread({**more.dtypes, **spread.dtypes}, max(spread.ulps, more.ulps))


def within_rounding(candidate: list[ProcessTrace], baseline: list[ProcessTrace], spread: RoundingSpread,
                    dtype_hint: str = "float32") -> Difference:
    """A candidate's GPU results against the original's when the original's own vary by rounding:
    the results it varied within ROUNDING_ULPS, the ones it repeated bit for bit."""
    paired = _paired(candidate, baseline, "the baseline")
    if isinstance(paired, Difference):
        return paired
    worst = 0
    for i, (ct, cr), (bt, br) in paired:
        what = f"GPU result {i} ({br.source}, {br.bytes} bytes)"
        c, b = ct.kept_bytes(cr), bt.kept_bytes(br)
        dtype = spread.dtypes.get(i)
        if dtype is None:
            where, ulps = first_difference(c, b, dtype_hint)
            return Difference(False, f"{what} differs from the baseline's{where}, where the original repeats it "
                                     "bit for bit", ulps)
        if cr.kept < cr.bytes:
            return Difference(False, f"{what} differs from the baseline's and only {cr.kept} of its bytes were kept "
                                     "to compare")
        ulps = rounding_ulps(c, b, dtype)
        if ulps is None:
            where, far = first_difference(c, b, dtype)
            return Difference(False, f"{what} differs from the baseline's by more than rounding{where}", far)
        worst = max(worst, ulps)
    return Difference(True, "", worst)
