"""`optimas init`: a config written from what a CUDA project's folder shows (kernels, build, run)."""
