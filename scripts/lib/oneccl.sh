# shellcheck shell=bash
# Intel oneCCL's CPU build for plait-bench's --oneccl column (sourced by
# scripts/bench): `install_oneccl PREFIX` puts include/oneapi/ccl.hpp and
# lib/libccl.so* under PREFIX, from the wheels on the Python package index:
#   oneccl-cpu-devel  the headers;
#   oneccl-cpu        libccl.so.1, the CPU library;
#   oneccl            only its libccl.so.2, which libccl.so.1 needs (Intel's
#                     runtime helpers: memcpy, CPU dispatch); the rest of that
#                     wheel is the GPU build.
# The wheels' declared dependency, a libfabric >= 2.6 wheel, is not on the
# index; Debian's libfabric1 (1.17) has the shm and tcp providers that
# oneCCL's default transport (OFI) opens at run time, and it runs with them.
# The static libccl.a of oneccl-cpu-devel needs Intel's compiler runtime, so
# the shared library is what plait-bench links.

oneccl_version=2022.2.0

install_oneccl() {
  local prefix="$1"
  if [ -f "$prefix/include/oneapi/ccl.hpp" ] && [ -e "$prefix/lib/libccl.so.2" ]; then
    return 0
  fi
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); fi
  if ! python3 -m pip --version >/dev/null 2>&1 || ! ldconfig -p | grep -q 'libfabric\.so\.1 '; then
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-pip libfabric1
  fi
  local wheels
  wheels="$(mktemp -d)"
  echo "bench: installing oneCCL $oneccl_version (CPU) into $prefix (pip download)"
  python3 -m pip download -q --no-deps --dest "$wheels" \
    "oneccl-cpu-devel==$oneccl_version" "oneccl-cpu==$oneccl_version" "oneccl==$oneccl_version"
  rm -rf "$prefix"
  mkdir -p "$prefix/lib"
  python3 - "$wheels" "$prefix" <<'PY'
import glob, os, shutil, sys, zipfile
wheels, prefix = sys.argv[1], sys.argv[2]
def extract(package, wanted):
    (path,) = glob.glob(os.path.join(wheels, package + "-*.whl"))
    with zipfile.ZipFile(path) as wheel:
        for name in wheel.namelist():
            # Wheels keep a prefix's tree under <name>.data/data/.
            inside = name.split(".data/data/", 1)[1] if ".data/data/" in name else None
            if inside and wanted(inside):
                target = os.path.join(prefix, inside)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with wheel.open(name) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst)
extract("oneccl_cpu_devel", lambda p: p.startswith("include/"))
extract("oneccl_cpu", lambda p: p == "lib/libccl.so.1.0")
extract("oneccl", lambda p: p == "lib/libccl.so.2.0")
PY
  # Wheels store the libraries' links as copies; make them links again.
  ln -sf libccl.so.1.0 "$prefix/lib/libccl.so.1"
  ln -sf libccl.so.1 "$prefix/lib/libccl.so"
  ln -sf libccl.so.2.0 "$prefix/lib/libccl.so.2"
  rm -rf "$wheels"
}
