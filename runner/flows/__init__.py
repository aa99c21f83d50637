"""Flows built from the stages: one iteration from recorded profiles, the closed loop on a GPU, and
the ablation over diagnostic configurations. The CLI and the bot call these."""
