"""The profiling stage: the typed profile model, one reader per Nsight Compute export format, and the
Profiling Agent that builds the app and collects profiles on the GPU."""
