"""The evaluation stage: validate and time a candidate against the original, the statistics of the
speed-up, EAR scores, the verdict with its corpus record, and the corpus store."""
