"""What every stage stands on: configuration, errors, the run store, the CUDA source scanner, the
processes Optimas starts (their environment, command templates, one runner with timeout and
process-group kill), the GPU and the tools, workspaces, and redaction. Imports nothing of the stages."""
