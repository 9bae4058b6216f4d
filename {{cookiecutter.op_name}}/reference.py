{%- set op = cookiecutter.__op -%}
{%- set params = (op | kb_op_info).inputs | join(", ") -%}
"""PyTorch reference for `{{ op }}` ({{ cookiecutter.pattern }}): the ground truth test_kernel.py checks against.

{% if cookiecutter.pytorch_logic -%}
The logic is yours: `{{ cookiecutter.__pytorch_logic_function }}` from {{ cookiecutter.pytorch_logic }}, copied here as
user_logic.py. The harness generates this op's inputs ({{ params }}) and hands them to your function
by parameter name when its parameters are named {{ params }}, otherwise by position.
{%- else -%}
Built in: the plain PyTorch expression of the op. It is also the "torch eager" baseline that
test_kernel.py times in the same run as the kernel.
{%- endif %}

The harness calls reference(*inputs) twice: on float64 copies for correctness (so the reference
itself adds no rounding error), and on the native-dtype inputs for the eager timing.
make_inputs draws fresh random data for every case: never zeros, which hide unwritten outputs.
"""

{% if cookiecutter.pytorch_logic -%}
import inspect

import torch
from user_logic import {{ cookiecutter.__pytorch_logic_function }} as user_function
{% else -%}
import torch
{%- if op not in ["add", "mul"] %}
import torch.nn.functional as F
{%- endif %}
{% endif %}
INPUTS = [{% for name in params.split(", ") %}"{{ name }}"{{ ", " if not loop.last }}{% endfor %}]


def reference({{ params }}):
{%- if cookiecutter.pytorch_logic %}
    """Your function, called with this op's inputs mapped by name (or by position)."""
    tensors = dict(zip(INPUTS, ({{ params }},)))
    names = list(inspect.signature(user_function).parameters)
    if set(INPUTS) <= set(names):
        return user_function(**tensors)
    return user_function(*tensors.values())
{%- elif op == "add" %}
    return x + y
{%- elif op == "mul" %}
    return x * y
{%- elif op == "silu" %}
    return F.silu(x)
{%- elif op == "gelu" %}
    return F.gelu(x)  # exact erf form (approximate="none"), the same as the kernel
{%- elif op == "relu" %}
    return F.relu(x)
{%- elif op == "silu_mul" %}
    return F.silu(x) * y  # SwiGLU: x is the gate projection, y the up projection
{%- endif %}


def make_inputs(dims, dtype, device, seed):
    """Fresh standard-normal inputs of shape `dims` (1-D or 2-D, contiguous), one per name in INPUTS."""
    gen = torch.Generator(device=device).manual_seed(seed)
    return [torch.randn(dims, dtype=dtype, device=device, generator=gen) for _ in INPUTS]

