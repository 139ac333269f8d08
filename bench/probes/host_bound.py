# Is the emitted ws forward at D=128, S=1k host-bound? Per call: host enqueue time, wall time, and the GPU time of
# one call inside a CUDA graph of 20 (no host gaps, L2 warm). Run on the device with FLASHC_BUNDLE_PATH holding the
# D=128 16-head benchmark bundle (session 5, call 9 also ran the cp.async forward, then --experiment=cp-async-forward;
# today a point of the forward's tuning space: python -m flashc.tune times it).
import time, torch, flashc.torch as ft
torch.manual_seed(0)
q, k, v = (torch.randn(16, 16, 1024, 128, device="cuda").to(torch.bfloat16) for _ in range(3))
for name in ("ws",):
    f = lambda: ft.attention(q, k, v)
    for _ in range(20): f()
    torch.cuda.synchronize()
    n = 200
    t0 = time.perf_counter()
    for _ in range(n): f()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    # GPU time of one call when the queue is already full (no host gaps): a graph of 20 calls
    g = torch.cuda.CUDAGraph()
    try:
        st = torch.cuda.Stream()
        with torch.cuda.stream(st):
            f(); torch.cuda.synchronize()
            with torch.cuda.graph(g):
                for _ in range(20): f()
        torch.cuda.synchronize()
        s.record(); g.replay(); e.record(); torch.cuda.synchronize()
        graph_ms = s.elapsed_time(e) / 20
    except Exception as ex:
        graph_ms = "graph failed: %s" % str(ex)[:120]
    print("%-8s host enqueue %.3f ms/call, wall %.3f ms/call, CUDA-graph GPU %s ms/call" % (
        name, (t1 - t0) * 1e3 / n, (t2 - t0) * 1e3 / n, graph_ms if isinstance(graph_ms, str) else "%.3f" % graph_ms))
