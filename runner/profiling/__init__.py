"""The profiling stage: the Profiling Agent, which builds the app and collects its profiles on the GPU
(it picks the hot kernels to collect with the analysis stage's alpha selection)."""
