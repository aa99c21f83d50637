"""The analysis stage: small pure functions over profiles (hot kernels, roofline, salient stalls,
eOMP counters) and the stage that turns profile files into cited evidence (diagnostics)."""
