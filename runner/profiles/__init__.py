"""Profiles as data: the typed profile model, one reader per Nsight Compute (and tracer) export format,
and the counter-run plan. The profiling agent writes what these read; analysis reads them."""
