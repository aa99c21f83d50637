"""The public repositories of the init survey of 2026-12-07b (benchmarks/results/init-survey-2026-12-07b.md):
each one's upstream, the commit surveyed and the folders (or make/CMake programs) surveyed, and their extraction
from a bare snapshot of the repository into a scratch folder (init writes optimas.yml files: never run it on the
snapshot's owner's tree).

Usage: python benchmarks/survey_repos.py --mirror DIR [--dest /tmp/survey] [--list]
DIR holds one bare git directory per repository, named owner+name/repo (as a `git clone --mirror` or the
session's fetch tool leaves them). A blob the snapshot lacks (large data files) is left out and counted.
"""

from __future__ import annotations

import argparse
import logging
import subprocess
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Repo:
    """One surveyed repository: where it is, the commit, and which folders the survey gives init."""

    slug: str  # owner/name on GitHub
    commit: str
    date: str
    license: str  # the LICENSE file(s) in the upstream, kept in the scratch copy
    folders: tuple[str, ...] = ()  # program folders; init_survey.py surveys every program init lists in each
    note: str = ""

    @property
    def name(self) -> str:
        """The scratch folder's name."""
        return self.slug.split("/")[1]


_LEARN = "Chapter0{}/0{}_{}/{}"
_CTS = ("hw1", "hw2", "hw3", "hw4", "hw5", "hw6", "hw7", "hw8/task1", "hw8/task2", "hw8/task3", "hw9", "hw10", "hw11",
        "hw12", "hw13", "hw13/Solutions")

SURVEY: tuple[Repo, ...] = (
    Repo("PacktPublishing/Learn-CUDA-Programming", "10bd9b59bfcc680d608ea1417da5089f73d91b11", "2023-12-30",
         "LICENSE (MIT)", tuple(
             [_LEARN.format(1, 1, "cuda_introduction", f) for f in ("01_hello_world", "02_vector_addition")]
             + [_LEARN.format(2, 2, "memory_overview", f) for f in (
                 "01_sgemm", "02_vector_addition", "03_aos_soa", "04_matrix_transpose", "05_image_scaling",
                 "06_unified_memory")]
             + [_LEARN.format(3, 3, "cuda_thread_programming", f) for f in (
                 "01_warp_and_thread_block", "02_cuda_occupancy", "03_threadsync_and_reduction",
                 "04_performance_limiter", "05_warp_divergence", "06_limiter_balancing",
                 "07_warp_synchronous_programming", "08_cooperative_group", "09_loop_unrolling", "10_atomic_operation",
                 "11_mixed_precision_operation")]
             + [_LEARN.format(4, 4, "kernel_execution", f) for f in (
                 "01_cuda_stream", "02_pipelining", "03_cuda_callback", "04_stream_priority", "05_cuda_event",
                 "06_dynamic_parallelism", "07_grid_level_cg", "08_openmp_cuda", "09_mps",
                 "10_kernel_execution_overhead")]
             + [_LEARN.format(5, 5, "debug_profiling", f) for f in (
                 "01_focused_profile", "02_nvtx", "03_cuda_error", "04_cuda_assert", "07_debug_with_gdb",
                 "08_memcheck")]
             + [_LEARN.format(6, 6, "multigpu", f) for f in ("02_gaussian_multi_gpu", "05_streams", "06_nccl")]
             + [_LEARN.format(7, 7, "parallel_programming_pattern", f) for f in (
                 "01_sgemm_optimization", "02_convolution", "03_scan", "04_pack_n_split", "05_n-body", "06_quicksort",
                 "07_radixsort", "08_histogram")]
             + [_LEARN.format(8, 8, "cuda_libs_and_other_languages", f) for f in (
                 "01_sgemm", "02_sgemm_mixed_precision", "03_curand", "04_cufft")]),
         note="per-folder Makefiles (a chapter's Makefile runs them all); Chapters 9-10 (OpenACC, cuDNN) left out"),
    Repo("NVIDIA-developer-blog/code-samples", "72d62ec464442786a36754508bcb1094d197d6a5", "2025-09-18",
         "license.txt (BSD-3-Clause); posts/gups/LICENSE", (
             "c++11_cuda", "posts/american-options", "posts/cuda-vmm", "posts/cufft-callbacks", "posts/gups",
             "posts/math-libraries-intro", "posts/mixed-precision", "posts/nvml", "posts/nvtx",
             "posts/parallel_reduction_with_shfl", "posts/printf-alternative", "posts/rnn", "posts/tensor-cores",
             "posts/unified-memory", "posts/unified-memory-oversubscription", "series/cuda-cpp/coalescing-global",
             "series/cuda-cpp/finite-difference", "series/cuda-cpp/optimize-data-transfers",
             "series/cuda-cpp/overlap-data-transfers", "series/cuda-cpp/shared-memory", "series/cuda-cpp/transpose"),
         note="per-folder Makefiles (one CMake project: printf-alternative); series/cuda-cpp: plain nvcc folders"),
    Repo("olcf/cuda-training-series", "9cd77d539d85ee3457e09a083ba299b787b7a16e", "2021-10-13",
         "none in the repository (OLCF training material)", tuple(f"exercises/{h}" for h in _CTS),
         note="plain nvcc folders, each with several programs (an exercise with FIXME blanks and its solution)"),
    Repo("siboehm/SGEMM_CUDA", "60cba6f9b20a198116c76f18de8047f44df8c8b8", "2023-12-27", "LICENSE (MIT)", (".",),
         note="one CMake project, three add_executable"),
    Repo("ekondis/mixbench", "236a0be007a5937e9ffb4a6c7eb1fafed6108e80", "2026-05-31", "LICENSE (GPL-2.0)",
         ("mixbench-cuda",), note="CMake, CUDA language"),
    Repo("ekondis/gpumembench", "838a4fcd5e6bdf8d09a10da10fb4b98bf484771a", "2017-08-12", "LICENSE (GPL-2.0)",
         ("cachebench-cuda", "constbench-cuda", "shmembench-cuda"),
         note="per-folder Makefiles including ../common.mk, several targets each"),
    Repo("UoB-HPC/BabelStream", "57637d572532fc028b6c0964944f1afc27ff5436", "2026-04-10", "LICENSE (custom BSD-like)",
         (".",), note="CMake with a MODEL option (cuda among 20 models)"),
    Repo("gpgpu-sim/ispass2009-benchmarks", "1716296b22bc78acdef08fb46a338f36f9dd4b96", "2013-02-18",
         "none in the repository (each benchmark its authors')",
         ("AES", "BFS", "CP", "DG", "LIB", "LPS", "MUM", "NN", "NQU", "RAY", "STO", "WP"),
         note="CUDA SDK 2.x style Makefiles including ../../common/common.mk (the SDK's, not in the repository)"),
    Repo("vetter/shoc", "0aea03beba2f09fcb5935cc11737372fe4de9ec0", "2020-04-17",
         "LICENSE.md (BSD-3-Clause), LICENSE-CUDPP.txt",
         tuple(f"src/cuda/level1/{f}" for f in (
             "bfs", "fft", "md", "md5hash", "neuralnet", "reduction", "scan", "sort", "spmv", "stencil2d", "triad"))
         + ("src/cuda/level2/qtclustering", "src/cuda/level2/s3d"),
         note="autoconf (configure makes the Makefiles from Makefile.in); its CMakeLists.txt are empty"),
    # Added by the pass of 2026-12-07e (init-survey-2026-12-07e.md): init and check-config only, on this machine.
    Repo("karpathy/llm.c", "f1e2ace651495b74ae22d45d1723443fd00ecd3a", "2025-05-10", "LICENSE (MIT)", ("dev/cuda",),
         note="one Makefile, a %: %.cu pattern rule and a TARGETS list of 22 programs; all link cuBLAS"),
    Repo("NVIDIA/multi-gpu-programming-models", "9a600f5ea8f5e53614e30b7b36e9136107178dd8", "2025-09-25",
         "LICENSE.md (BSD-3-Clause)", ("single_gpu",),
         note="per-folder Makefiles (the others need MPI, NCCL or NVSHMEM); sizes from -nx/-ny flags with defaults"),
    Repo("CoffeeBeforeArch/cuda_programming", "8711be08e2060680820304594f3691cc0016edd1", "2021-06-20",
         "LICENSE (GPL-3.0)", (".",), note="no build file: 23 programs in folders of variants, many named alike"),
    Repo("leimao/CUDA-GEMM-Optimization", "747e49b418bca18557581969c78333443055fd43", "2024-07-18", "LICENSE (MIT)",
         (".",), note="CMake 3.28 (newer than this machine's 3.25); a shared library of kernels, two executables"),
    Repo("yuhc/gpu-rodinia", "9c10d3ea16ddba2ba057cc3951a9efc4c2cc18a4", "2023-04-13", "LICENSE (University of "
         "Virginia)", tuple(f"cuda/{f}" for f in ("backprop", "bfs", "b+tree", "cfd", "dwt2d", "gaussian", "heartwall",
                                                   "hotspot")),
         note="per-folder Makefiles including ../../common/make.config, a run script each; the data folder is fetched "
              "apart (absent)"),
)


def _blobs(git_dir: Path, commit: str) -> list[tuple[str, str, str]]:
    """(mode, sha, path) of every file at the commit."""
    out = subprocess.run(["git", f"--git-dir={git_dir}", "ls-tree", "-r", "-z", commit], capture_output=True,
                         check=True).stdout.decode()
    rows = []
    for entry in out.split("\0"):
        if not entry:
            continue
        meta, path = entry.split("\t", 1)
        mode, kind, sha = meta.split()
        if kind == "blob":
            rows.append((mode, sha, path))
    return rows


def extract(git_dir: Path, commit: str, dest: Path) -> tuple[int, list[str]]:
    """Write the commit's files under dest; return how many were written and the paths whose blob is missing."""
    missing: list[str] = []
    written = 0
    for mode, sha, path in _blobs(git_dir, commit):
        r = subprocess.run(["git", f"--git-dir={git_dir}", "cat-file", "blob", sha], capture_output=True)
        if r.returncode != 0:
            missing.append(path)
            continue
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if mode == "120000":  # a symbolic link: its blob is the target
            target.unlink(missing_ok=True)
            target.symlink_to(r.stdout.decode())
            continue
        target.write_bytes(r.stdout)
        if mode == "100755":
            target.chmod(0o755)
        written += 1
    return written, missing


def find_git_dir(mirror: Path, slug: str) -> Path:
    """The bare git directory of a repository under the mirror folder."""
    base = mirror / slug.replace("/", "+") / "repo"
    return base / ".git" if (base / ".git").is_dir() else base


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--dest", type=Path, default=Path("/tmp/survey"))
    ap.add_argument("--list", action="store_true", help="print the repositories and folders, extract nothing")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for repo in SURVEY:
        if args.list:
            print(f"https://github.com/{repo.slug} {repo.commit} ({repo.date}): "
                  f"{len(repo.folders)} folders ({repo.note})")
            continue
        git_dir = find_git_dir(args.mirror, repo.slug)
        if not git_dir.is_dir():
            log.warning("%s: no snapshot at %s (fetch it first); skipped", repo.slug, git_dir)
            continue
        head = subprocess.run(["git", f"--git-dir={git_dir}", "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
        if head != repo.commit:
            log.warning("%s: the snapshot is at %s, the survey at %s (extracting the survey's)", repo.slug, head,
                        repo.commit)
        n, missing = extract(git_dir, repo.commit, args.dest / repo.name)
        print(f"{repo.slug}: {n} files under {args.dest / repo.name}, {len(missing)} blobs absent from the snapshot")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
