# Source this first in every H200 command (see ../shared/device/README.md): the CuTe DSL bundle and the
# TVM-FFI / quack wheels, unpacked from the ignored .carry/ folder into /tmp/site.
mkdir -p /tmp/site && tar -xJf .carry/kbaseline-device-py312.tar.xz -C /tmp/site
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .carry/wheels/*.whl
export PYTHONPATH=/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages PYTHONUNBUFFERED=1
