"""Optimas GitHub App (webhooks, queue, publishing). Knows nothing of Nsight Compute."""
