"""Building the app: the build (nvcc, make, CMake or a script) in a copy of the workspace, the build
cache, the nvcc shim with its compatibility headers, and ptxas's per-kernel report. Profiling,
proposal and evaluation all build through it."""
