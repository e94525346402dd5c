#!/usr/bin/env bash
# Installs what the build needs on Debian 12 (root or sudo): LLVM 19 with
# NVPTX, Lua 5.4, jansson and nettle (SHA-256) as static libraries, CMake, a C compiler.
# CUDA's cuda.h and ptxas are expected under /usr/local/cuda (ptxas is only
# needed by the PTX checks, cuda.h by the build). Debian's PyTorch (CPU) for
# the tests of the Python package and the training example, without its
# recommended desktop libraries.
set -eu
need=()
for p in cmake gcc g++ make llvm-19-dev liblua5.4-dev libzstd-dev libjansson-dev nettle-dev zlib1g-dev; do
	dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
	echo "installing: ${need[*]}"
	SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
if ! dpkg -s python3-torch >/dev/null 2>&1; then
	echo "installing: python3-torch python3-numpy"
	SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
	[ ${#need[@]} -gt 0 ] || $SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-torch python3-numpy \
		>/dev/null
fi
if [ ! -f /usr/local/cuda/include/cuda.h ] && [ -z "${CUDA_HOME:-}" ]; then
	echo "cuda.h not found: install the CUDA toolkit headers under /usr/local/cuda or set CUDA_HOME" >&2
	exit 1
fi
