"""The CUPTI tracer: kernel times and device-to-host results of an unmodified CUDA program (how two
runs' results compare is runner.validation's)."""
