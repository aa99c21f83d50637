"""Scanning CUDA C++ source text: functions and kernels as profilers name them (cuda_source), the
constants that size a program (size_constants) and its kernel launch sites (launch_sites). Pure
functions over text, below every other room: the configuration's checks, init and the stages use them."""
