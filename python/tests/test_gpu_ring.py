"""flashc.ring on the GPU with real bundles: sharded_attention (one device, every ring step's launches and merges)
against PyTorch float64 math, and ring_attention over NCCL when the machine has 2 or more GPUs.

Bundles come from FLASHC_BUNDLE_PATH / the cache (python -m flashc.prebuild --out DIR tests) or the compiler. A
causal sharded call launches the causal bundle (diagonal blocks) and its non-causal twin (full blocks); a twin
outside the 'tests' set skips loudly when it cannot be found. A sliding window's launches all use its key-offset
twin (configs.TEST_ATTENTION_KEY_OFFSET, in the 'tests' set: required): one per shard on the halo path (contiguous
chunks, the window within the neighbours' chunks), else one per pair of chunks on the ring. Every output is poisoned
with NaN before each launch.

Accuracy criterion: as test_gpu_attention (2 x the unfused same-precision error + a floor), with the floor raised
by the roundings sharding adds: each block's o is rounded to bf16/f16 by the kernel before the float32 merge (one
ulp of the data for o), and each block's dq/dk/dv is rounded before the float32 sums (one ulp per block summed).
"""

import dataclasses
import os
import sys
import tempfile
import traceback
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _support import cuda_available, requires_cuda, skip_loudly  # noqa: E402

import flashc  # noqa: E402
from flashc import configs  # noqa: E402

try:
    import torch
    from flashc import ring
    from flashc.testing import attention_reference
    from _gpu import TORCH_DTYPES, assert_close_to_reference, attention_inputs, setup_gpu_suite
except ImportError:
    pass

EPS = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11}
TEST_KEYS = {c.key for c in configs.TEST_ATTENTION + configs.TEST_ATTENTION_KEY_OFFSET}
# Everything in the test set without a window; sliding windows through their key-offset twins (WINDOW_CONFIGS).
CONFIGS = [c for c in configs.TEST_ATTENTION if c.window is None]
# The static form of each windowed key-offset test config: sharded_attention(window=...) launches its key-offset
# twin for every block (causal windows 16 and 96, the non-causal window (64, 32), f16, GQA with a softcap).
WINDOW_CONFIGS = [dataclasses.replace(c, key_offset=False) for c in configs.TEST_ATTENTION_KEY_OFFSET
                  if c.window is not None]
# (B, Sq, Sk): even chunks, ragged chunks, and Sq != Sk both ways (causal: bottom-right aligned, shard pairs that cut
# the diagonal, split by rows in ring.plan_blocks).
SHAPES = [(2, 256, 256), (1, 203, 203), (2, 200, 131), (1, 131, 200)]


def _needed(config, shards):
    if config.window is not None:
        return [dataclasses.replace(config, key_offset=True)]
    twins = [config]
    if config.causal and shards > 1:
        twins.append(dataclasses.replace(config, causal=False))
    return twins



def _reference(config, q, k, v, do, dtype):
    leaves = [t.detach().to(dtype).requires_grad_() for t in (q, k, v)]
    o, lse = attention_reference(*leaves, causal=config.causal, scale=config.scale, softcap=config.softcap,
                                 window=config.window, dtype=dtype)
    return o, lse, torch.autograd.grad(o, leaves, do.to(dtype))


def _check(test, label, config, shards, q, k, v, do, o, lse, grads):
    o64, lse64, grads64 = _reference(config, q, k, v, do, torch.float64)
    o_lp, lse_lp, grads_lp = _reference(config, q, k, v, do, q.dtype)
    eps = EPS[config.dtype]
    test.assertEqual(o.dtype, q.dtype)
    assert_close_to_reference(test, label + " o", o, o_lp, o64, floor=1e-4 + eps)
    assert_close_to_reference(test, label + " lse", lse, lse_lp, lse64, floor=1e-3)
    for name, got, base, ref in zip(("dq", "dk", "dv"), grads, grads_lp, grads64):
        test.assertEqual(got.shape, ref.shape, name)
        # a window's key rows take partial sums from up to three shards (halo: own and both neighbours'), or from
        # every rank's query chunk on the ring
        pieces = shards * (2 if config.window is not None else 1)
        assert_close_to_reference(test, label + " " + name, got, base, ref, floor=1e-4 + eps * pieces)


@requires_cuda
class ShardedGpuTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        setup_gpu_suite()

    def run_sharded(self, config, batch, seq_q, seq_k, shards, seed=0, path="auto"):
        label = "%s B=%d Sq=%d Sk=%d shards=%d" % (config.describe(), batch, seq_q, seq_k, shards)
        q, k, v, do = attention_inputs(config, batch, seq_q, seq_k, seed)
        kw = dict(causal=config.causal, scale=config.scale, softcap=config.softcap or None,
                  enable_gqa=config.num_heads != config.num_kv_heads, window=config.window)
        if config.window is not None:
            layout = ring.sharded_layout(seq_q, seq_k, shards, config.causal, config.window)
            label += " (%s path)" % ("halo" if path == "auto" and ring.halo_plans(layout) is not None else "ring")
        try:
            if path == "ring":  # the ring's schedule on a layout the halo path would take
                o, lse = ring._sharded_apply(q, k, v, ring._config("test", q, k, v, **kw), layout, path="ring")
            else:
                o, lse = ring.sharded_attention(q, k, v, shards, return_lse=True, path=path, **kw)
            grads = torch.autograd.grad(o, (q, k, v), do)
        except flashc.BundleNotFoundError as e:
            optional = config.head_dim > 128 or any(c.key not in TEST_KEYS for c in _needed(config, shards))
            if optional:
                sys.stderr.write("SKIPPED (optional configuration): %s\n" % e)
                raise unittest.SkipTest(str(e))
            raise
        torch.cuda.synchronize()
        _check(self, label, config, shards, q, k, v, do, o, lse, grads)

    def test_configs_shards_and_ragged_shapes(self):
        for config in CONFIGS:
            for batch, seq_q, seq_k in SHAPES:
                for shards in (1, 2, 3, 4):
                    with self.subTest(config=config.describe(), batch=batch, seq_q=seq_q, seq_k=seq_k, shards=shards):
                        self.run_sharded(config, batch, seq_q, seq_k, shards)

    def test_sliding_windows(self):
        """Causal windows and a non-causal window (contiguous chunks), smaller and larger than the chunks (32 to 256
        rows), Sq != Sk both ways, 1-4 shards: the halo path where it applies, else the ring (every launch a
        key-offset one); 3 shards also through the ring's schedule regardless."""
        for config in WINDOW_CONFIGS:
            for batch, seq_q, seq_k in SHAPES:
                for shards in (1, 2, 3, 4):
                    for path in ("auto", "ring") if shards == 3 else ("auto",):
                        with self.subTest(config=config.describe(), batch=batch, seq_q=seq_q, seq_k=seq_k,
                                          shards=shards, path=path):
                            self.run_sharded(config, batch, seq_q, seq_k, shards, seed=shards, path=path)

    def test_one_shard_is_the_plain_kernel(self):
        import flashc.torch as ft
        for config in (configs.TEST_ATTENTION[2], configs.TEST_ATTENTION[3]):
            q, k, v, do = attention_inputs(config, 2, 128, 128, seed=1)
            o, lse = ring.sharded_attention(q, k, v, 1, causal=config.causal, return_lse=True)
            o_p, lse_p = ft.attention(q, k, v, causal=config.causal, return_lse=True)
            self.assertTrue(torch.equal(o, o_p), config.describe())
            self.assertTrue(torch.equal(lse, lse_p), config.describe())


# ------------------------------------------------------------ ring over NCCL (2+ GPUs)
def _ring_worker(rank, world, init_file, results):
    try:
        import torch.distributed as dist
        from flashc import ring as ring_module  # sets NCCL_NVLS_ENABLE=0 before the process group exists
        assert os.environ.get("NCCL_NVLS_ENABLE") is not None
        torch.cuda.set_device(rank)
        setup_gpu_suite()
        dist.init_process_group("nccl", init_method="file://" + init_file, rank=rank, world_size=world)
        test = unittest.TestCase()
        try:
            # plain, causal, D = 192 / Dv = 128; windows over contiguous chunks of 64, through the halo path: a
            # causal window of 16 (f16) and a non-causal (64, 32) (the whole previous chunk); the ring fallback: a
            # causal window of 96 (GQA, softcap), larger than a chunk (the ring itself on 2 ranks, where the halo
            # path would still fit: rank 1's window stops at key 0; by itself on 4).
            cases = [(c, "auto") for c in (configs.TEST_ATTENTION[2], configs.TEST_ATTENTION[3],
                                           configs.TEST_ATTENTION[-3], WINDOW_CONFIGS[1], WINDOW_CONFIGS[2],
                                           WINDOW_CONFIGS[-1])] + [(WINDOW_CONFIGS[-1], "ring")]
            for config, path in cases:
                batch, seq = 2, 64 * world
                g = torch.Generator(device="cuda").manual_seed(7)  # every rank draws the same full tensors
                dtype = getattr(torch, TORCH_DTYPES[config.dtype])
                full = lambda h, d: torch.randn(batch, h, seq, d, device="cuda", generator=g).to(dtype)
                q, k, v = full(config.num_heads, config.head_dim), full(config.num_kv_heads, config.head_dim), \
                    full(config.num_kv_heads, config.value_head_dim)
                do = full(config.num_heads, config.value_head_dim)
                if config.causal and config.window is None:
                    shard = lambda t: ring_module.zigzag_shard(t, world, rank)
                else:  # windows: contiguous chunks, causal or not
                    shard = lambda t: t.chunk(world, dim=2)[rank]
                ql, kl, vl = (shard(t).clone().requires_grad_() for t in (q, k, v))
                kw = dict(causal=config.causal, enable_gqa=config.num_heads != config.num_kv_heads,
                          scale=config.scale, softcap=config.softcap or None, window=config.window)
                label = "ring %s rank %d/%d" % (config.describe(), rank, world)
                if config.window is not None:
                    layout = ring_module.ring_layout(world, config.causal, [ql.shape[2]] * world,
                                                     [kl.shape[2]] * world, config.window)
                    halo = path == "auto" and ring_module.halo_plans(layout) is not None
                    test.assertEqual(halo, path == "auto" and (config.window[0] <= 64 or world == 2), label)
                    label += " (%s path)" % ("halo" if halo else "ring")
                if path == "ring":
                    o, lse = ring_module._ring_apply(ql, kl, vl, ring_module._config("test", ql, kl, vl, **kw),
                                                     path="ring")
                else:
                    o, lse = ring_module.ring_attention(ql, kl, vl, return_lse=True, path=path, **kw)
                grads = torch.autograd.grad(o, (ql, kl, vl), shard(do))
                torch.cuda.synchronize()
                o64, lse64, g64 = _reference(config, q, k, v, do, torch.float64)
                o_lp, lse_lp, g_lp = _reference(config, q, k, v, do, q.dtype)
                eps = EPS[config.dtype]
                assert_close_to_reference(test, label + " o", o, shard(o_lp), shard(o64), floor=1e-4 + eps)
                assert_close_to_reference(test, label + " lse", lse, shard(lse_lp), shard(lse64), floor=1e-3)
                for name, got, base, ref in zip(("dq", "dk", "dv"), grads, g_lp, g64):
                    assert_close_to_reference(test, label + " " + name, got, shard(base), shard(ref),
                                              floor=1e-4 + eps * 2 * world)
        finally:
            dist.destroy_process_group()
        results.put((rank, "ok"))
    except BaseException:
        results.put((rank, traceback.format_exc()))


def _multi_gpu(cls):
    if cuda_available() and torch.cuda.device_count() >= 2:
        return cls
    why = "no CUDA" if not cuda_available() else "fewer than 2 GPUs"
    return skip_loudly("multi-GPU ring tests %s skipped: %s" % (cls.__name__, why))(cls)


@_multi_gpu
class RingNcclTest(unittest.TestCase):
    def test_ring_attention(self):
        import multiprocessing
        ctx = multiprocessing.get_context("spawn")
        for world in sorted({2, min(4, torch.cuda.device_count())}):
            with self.subTest(world=world), tempfile.TemporaryDirectory() as tmp:
                results = ctx.Queue()
                procs = [ctx.Process(target=_ring_worker, args=(r, world, os.path.join(tmp, "init"), results))
                         for r in range(world)]
                for p in procs:
                    p.start()
                got = {}
                try:
                    for _ in range(world):
                        rank, outcome = results.get(timeout=600)
                        got[rank] = outcome
                finally:
                    for p in procs:
                        p.join(timeout=60)
                        if p.is_alive():
                            p.terminate()
                for rank in range(world):
                    self.assertEqual(got.get(rank), "ok", "rank %d of %d: %s" % (rank, world, got.get(rank)))


if __name__ == "__main__":
    unittest.main()
