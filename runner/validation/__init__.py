"""How a candidate's results are compared with the original's (compare: output files and the GPU
results the tracer saw, one comparator per validation mode, and what counts as within rounding)."""
