import torch, sys, time
sys.path.insert(0, ".")
import kernel
x = torch.randn(1000, 1111, device="cuda", dtype=torch.bfloat16); y = torch.randn_like(x); out = torch.empty_like(x)
kernel.run(x, y, out=out); torch.cuda.synchronize()
g = torch.cuda.CUDAGraph()
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    kernel.run(x, y, out=out)
torch.cuda.synchronize()
print("side stream ok", torch.allclose(out.float(), (x + y).float(), atol=1e-2))
out.zero_()
with torch.cuda.graph(g):
    kernel.run(x, y, out=out)
x.copy_(torch.randn_like(x)); g.replay(); torch.cuda.synchronize()
print("graph ok", (out.float() - (x + y).float()).abs().max().item())
for f, name in ((lambda: kernel.run(x, y, out=out), "run out="), (lambda: kernel.run(x, y), "run alloc"), (lambda: torch.add(x, y, out=out), "torch add out="), (lambda: torch.add(x, y), "torch add")):
    f(); torch.cuda.synchronize(); t = time.perf_counter()
    for _ in range(2000): f()
    dt = (time.perf_counter() - t) / 2000 * 1e6; torch.cuda.synchronize(); print(name, round(dt, 2), "us")
for bad in (lambda: kernel.run(x, y[:10]), lambda: kernel.run(x, y.float()), lambda: kernel.run(x, y.t()), lambda: kernel.run(x, y.cpu())):
    try:
        bad(); print("NOT REFUSED")
    except Exception as e: print("refusal:", type(e).__name__, e)
