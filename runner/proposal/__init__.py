"""The proposal stage: the prompt, the model backends, the parser of the model's answer, the
guardrails, the compiler, and the retry loop that turns evidence into a candidate that builds."""
