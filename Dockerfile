# syntax=docker/dockerfile:1
# Optimas container images, built from the repository root:
#   docker build --target app -t optimas-app .               # the App (webhook receiver, control worker)
#   docker build --target gpu-worker -t optimas-gpu-worker .  # the GPU worker: CUDA, Nsight Compute, RQ
# compose.yaml starts Redis, the App, a control worker and a GPU worker for local use.

ARG PYTHON_IMAGE=python:3.12-slim-bookworm
ARG CUDA_IMAGE=nvidia/cuda:13.0.1-devel-ubuntu24.04

# Wheels of Optimas and its pinned dependencies, so the images install offline from them.
FROM ${PYTHON_IMAGE} AS wheels
WORKDIR /src
COPY pyproject.toml README.md config.yml ./
COPY examples ./examples
COPY templates ./templates
COPY runner ./runner
COPY bot ./bot
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

# The App: gunicorn serving bot.wsgi:app with bot/serving.py's settings (gevent workers, so that slow
# clients hold no thread; their timeouts), as an unprivileged user. The control worker runs the same
# image with `rq worker -w bot.worker.OptimasWorker optimas-control`.
FROM ${PYTHON_IMAGE} AS app
# /var/lib/optimas/runs: where compose mounts the GPU worker's run folders (a new volume takes the
# owner of the folder it is mounted on)
RUN useradd --system --create-home --uid 10001 optimas \
 && install -d -o 10001 -g 10001 -m 0750 /var/lib/optimas/runs
COPY --from=wheels /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links /wheels /wheels/optimas-*.whl && rm -rf /wheels
USER 10001
WORKDIR /home/optimas
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=3s \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2)"]
CMD ["gunicorn", "-c", "python:bot.serving", "--bind", "0.0.0.0:8000", "bot.wsgi:app"]

# The GPU worker: NVIDIA's CUDA development image (nvcc, CUPTI) with Nsight Compute, git for the
# pinned checkouts, bubblewrap for the sandbox that a pull request's code runs in, and Optimas in a
# virtual environment; one RQ worker per GPU the container sees.
# Profiling counters need the host's driver to allow non-admin profiling
# (NVreg_RestrictProfilingToAdminUsers=0), since the worker does not run as root.
FROM ${CUDA_IMAGE} AS gpu-worker
# The CUDA packages carry their version in their names (cuda-nsight-compute-13-0); Ubuntu's python3
# and git follow the base image's release.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv git ca-certificates bubblewrap \
    cuda-nsight-compute-13-0 \
 && rm -rf /var/lib/apt/lists/*
RUN useradd --system --create-home --uid 10001 optimas \
 && install -d -o 10001 -g 10001 -m 0750 /var/lib/optimas/runs
COPY --from=wheels /wheels /wheels
RUN python3 -m venv /opt/optimas \
 && /opt/optimas/bin/pip install --no-cache-dir --no-index --find-links /wheels /wheels/optimas-*.whl \
 && rm -rf /wheels
ENV PATH=/opt/optimas/bin:/usr/local/cuda/bin:${PATH}
USER 10001
WORKDIR /home/optimas
CMD ["python", "-m", "bot.gpu_workers"]
