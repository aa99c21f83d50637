"""The CUPTI tracer: kernel times and device-to-host results of an unmodified CUDA program, and how
two runs' results compare (bit for bit, or within rounding)."""
