# Source this first in every H200 command (see ../shared/device/README.md): the CuTe DSL bundle and the
# TVM-FFI / quack wheels, unpacked from the ignored .carry/ folder into /tmp/site.
# REQUIRE=H200 in front of the sourcing script stops it at once, for 0.2 s of device time, on any other card (a call
# that names nvidia-h200 may get an H100): exit 3, nothing unpacked or run.
if [ -n "${REQUIRE:-}" ]; then
  card=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
  case "$card" in *"$REQUIRE"*) ;; *) echo "${0##*/}: this card is ${card:-no NVIDIA GPU}, not $REQUIRE: nothing run" >&2; exit 3 ;; esac
fi
mkdir -p /tmp/site && tar -xJf .carry/kbaseline-device-py312.tar.xz -C /tmp/site
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .carry/wheels/*.whl
export PYTHONPATH=/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages PYTHONUNBUFFERED=1
