"""flashc.integrations.transformers without a GPU: what the registered attention function passes to flashc
(causal, GQA, scale, sliding windows, softcap, output layout [B, S, H, D]), the errors (padding masks, dropout,
float32, biases), the mask function, and small transformers models end to end with a CPU stand-in for
flashc.torch.attention that computes flashc's math (flashc.testing.attention_reference) against sdpa / eager.

The import checks run everywhere; the rest skips with a SKIPPED line without torch or transformers."""

import importlib.util
import os
import subprocess
import sys
import types
import unittest

from _support import HAVE_TORCH, PYTHON_DIR, skip_loudly

import flashc
from flashc.integrations import transformers as fc_hf

HAVE_TRANSFORMERS = importlib.util.find_spec("transformers") is not None
if HAVE_TORCH and HAVE_TRANSFORMERS:
    import torch
    import transformers
    from flashc.testing import attention_reference


def requires_transformers(cls):
    if HAVE_TORCH and HAVE_TRANSFORMERS:
        return cls
    missing = "torch" if not HAVE_TORCH else "transformers"
    return skip_loudly("%s is not installed: %s skipped" % (missing, cls.__name__))(cls)


class ImportTest(unittest.TestCase):
    """Runs without torch and transformers."""

    def test_imports_pull_in_neither_torch_nor_transformers(self):
        code = ("import sys; import flashc, flashc.integrations, flashc.integrations.transformers; "
                "bad = [m for m in ('torch', 'transformers') if m in sys.modules]; "
                "print(bad); sys.exit(1 if bad else 0)")
        env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
        result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def test_reserved_names_are_refused_before_importing_transformers(self):
        for name in ("flashc", "flash_attention_2", "my_flash", "sdpa", "flex_attention", "eager", "paged|x",
                     "org/kernel", "", None):
            with self.assertRaises(flashc.InvalidArgumentError, msg=repr(name)) as ctx:
                fc_hf.register(name)
            if name:
                self.assertIn(repr(name), str(ctx.exception))
        self.assertNotIn("flash", fc_hf.DEFAULT_NAME)


class Recorder:
    """Stand-in for flashc.torch.attention: records its arguments, returns a distinct value per element."""

    def __init__(self):
        self.calls = []

    def __call__(self, q, k, v, **options):
        self.calls.append(dict(q=q, k=k, v=v, **options))
        b, h, s, _ = q.shape
        n = b * h * s * v.shape[-1]
        return torch.arange(n, dtype=torch.float32).reshape(b, h, s, v.shape[-1]).to(q.dtype)


def reference_attention(q, k, v, causal=False, scale=None, window=None, softcap=None, enable_gqa=False):
    """flashc.torch.attention's math on the CPU, in float32 (differentiable), returned in q's dtype."""
    o, _ = attention_reference(q, k, v, causal=causal, scale=scale, window=window, softcap=softcap,
                               dtype=torch.float32)
    return o.to(q.dtype)


def qkv(batch=2, heads=4, kv_heads=2, seq_q=6, seq_k=6, dim=16, dtype=None):
    g = torch.Generator().manual_seed(0)
    dtype = dtype or torch.bfloat16
    return (torch.randn(batch, heads, seq_q, dim, generator=g).to(dtype),
            torch.randn(batch, kv_heads, seq_k, dim, generator=g).to(dtype),
            torch.randn(batch, kv_heads, seq_k, dim, generator=g).to(dtype))


def causal_bool_mask(batch, seq_q, seq_k):
    """transformers' 4-D boolean causal mask, bottom-right aligned (a cache of seq_k - seq_q tokens before)."""
    i = torch.arange(seq_q).unsqueeze(1) + (seq_k - seq_q)
    j = torch.arange(seq_k).unsqueeze(0)
    return (j <= i).expand(batch, 1, seq_q, seq_k).clone()


@requires_transformers
class MappingTest(unittest.TestCase):
    def setUp(self):
        self.rec = Recorder()
        self.fn = fc_hf.make_attention_forward(self.rec)
        self.module = types.SimpleNamespace(is_causal=True)

    def call(self, mask=None, module=None, q=None, **kw):
        q, k, v = qkv() if q is None else q
        return self.fn(module or self.module, q, k, v, mask, **kw), (q, k, v)

    def test_plain_causal_gqa_and_layout(self):
        (out, weights), (q, k, v) = self.call(scaling=0.3)
        self.assertIsNone(weights)
        call = self.rec.calls[-1]
        self.assertIs(call["q"], q)
        self.assertIs(call["k"], k)  # GQA: key/value keep their 2 heads, never repeated
        self.assertIs(call["v"], v)
        self.assertEqual((call["causal"], call["scale"], call["window"], call["softcap"], call["enable_gqa"]),
                         (True, 0.3, None, None, True))
        # [B, H, S, D] from flashc -> [B, S, H, D], contiguous
        expected = torch.arange(2 * 4 * 6 * 16, dtype=torch.float32).reshape(2, 4, 6, 16).to(q.dtype)
        self.assertEqual(tuple(out.shape), (2, 6, 4, 16))
        self.assertTrue(out.is_contiguous())
        self.assertTrue(torch.equal(out, expected.transpose(1, 2)))

    def test_scaling_none_and_is_causal(self):
        self.call(module=types.SimpleNamespace(is_causal=False))
        self.assertEqual((self.rec.calls[-1]["causal"], self.rec.calls[-1]["scale"]), (False, None))
        self.call(is_causal=False)  # the argument wins over module.is_causal
        self.assertFalse(self.rec.calls[-1]["causal"])
        self.call(module=types.SimpleNamespace())  # no attribute: causal, as transformers' own functions assume
        self.assertTrue(self.rec.calls[-1]["causal"])

    def test_sliding_window_and_softcap(self):
        self.call(sliding_window=4, softcap=30)
        self.assertEqual((self.rec.calls[-1]["window"], self.rec.calls[-1]["softcap"]), ((3, 0), 30.0))
        self.call(sliding_window=4, is_causal=False)  # bidirectional: |q - k| <= W
        self.assertEqual(self.rec.calls[-1]["window"], (4, 4))
        self.call(softcap=0.0)
        self.assertIsNone(self.rec.calls[-1]["softcap"])
        for bad in (0, -2, 2.5, True):
            with self.assertRaises(flashc.InvalidArgumentError):
                self.call(sliding_window=bad)

    def test_exact_masks_are_dropped(self):
        q, k, v = qkv(seq_q=6, seq_k=6)
        self.fn(self.module, q, k, v, causal_bool_mask(2, 6, 6))
        self.assertTrue(self.rec.calls[-1]["causal"])
        # additive form (eager_mask): 0 visible, dtype min hidden; and decoding with a cache (Sq < Sk)
        q, k, v = qkv(seq_q=3, seq_k=9)
        mask = causal_bool_mask(2, 3, 9)
        additive = torch.where(mask, 0.0, torch.finfo(torch.bfloat16).min).to(torch.bfloat16)
        self.fn(self.module, q, k, v, additive)
        self.assertIs(self.rec.calls[-1]["k"], k)
        # sliding window W = 3: keys p-2 .. p
        i = torch.arange(3).unsqueeze(1) + 6
        j = torch.arange(9).unsqueeze(0)
        window_mask = ((j <= i) & (j > i - 3)).expand(2, 1, 3, 9)
        self.fn(self.module, q, k, v, window_mask, sliding_window=3)
        self.assertEqual(self.rec.calls[-1]["window"], (2, 0))
        # without the window, that mask hides keys the causal pattern shows
        with self.assertRaisesRegex(flashc.UnsupportedError, "issue #17"):
            self.fn(self.module, q, k, v, window_mask.clone())

    def test_static_cache_slots_are_cut(self):
        # A static cache of 10 slots holding 4 tokens: the mask hides slots 4..9 from every query (top-left).
        q, k, v = qkv(seq_q=4, seq_k=10)
        mask = torch.zeros(2, 1, 4, 10, dtype=torch.bool)
        mask[..., :4] = causal_bool_mask(2, 4, 4)
        self.fn(self.module, q, k, v, mask)
        call = self.rec.calls[-1]
        self.assertEqual(tuple(call["k"].shape), (2, 2, 4, 16))
        self.assertEqual(tuple(call["v"].shape), (2, 2, 4, 16))
        self.assertTrue(torch.equal(call["k"], k[:, :, :4]))

    def test_padding_mask_is_refused(self):
        q, k, v = qkv()
        mask = causal_bool_mask(2, 6, 6)
        mask[0, :, :, :2] = False  # left padding of 2 tokens in sequence 0
        with self.assertRaisesRegex(flashc.UnsupportedError, r"padding masks need the variable-length path "
                                                             r"\(issue #17\), not supported yet"):
            self.fn(self.module, q, k, v, mask)
        self.assertEqual(self.rec.calls, [])
        right = causal_bool_mask(2, 6, 6)
        right[:, :, :, 4:] = False  # every sequence right-padded by 2
        with self.assertRaisesRegex(flashc.UnsupportedError, "issue #17"):
            self.fn(self.module, q, k, v, right)

    def test_other_masks_are_refused(self):
        q, k, v = qkv()
        mask = causal_bool_mask(2, 6, 6)
        mask[:, :, 0, 1] = True  # a bidirectional block
        with self.assertRaisesRegex(flashc.UnsupportedError, "not the causal pattern"):
            self.fn(self.module, q, k, v, mask)
        bias = torch.zeros(2, 1, 6, 6)
        bias[..., 0] = -1.5  # an attention bias
        with self.assertRaisesRegex(flashc.UnsupportedError, "attention bias"):
            self.fn(types.SimpleNamespace(is_causal=False), q, k, v, bias)
        with self.assertRaisesRegex(flashc.UnsupportedError, "4-D attention mask"):
            self.fn(self.module, q, k, v, torch.ones(2, 6, dtype=torch.bool))
        self.assertEqual(self.rec.calls, [])

    def test_mask_verdict_is_kept_per_mask(self):
        q, k, v = qkv()
        mask = causal_bool_mask(2, 6, 6)
        checks = []
        original = fc_hf._check_mask
        fc_hf._check_mask = lambda *a: checks.append(1) or original(*a)
        try:
            for _ in range(3):  # three layers, one mask
                self.fn(self.module, q, k, v, mask)
            mask[0, :, :, 0] = False  # changed in place: checked again, and refused
            with self.assertRaises(flashc.UnsupportedError):
                self.fn(self.module, q, k, v, mask)
        finally:
            fc_hf._check_mask = original
        self.assertEqual(len(checks), 2)

    def test_inference_mode_masks(self):
        with torch.inference_mode():  # inference tensors have no version counter: checked every time
            q, k, v = qkv()
            mask = causal_bool_mask(2, 6, 6)
            self.fn(self.module, q, k, v, mask)
            mask[1, :, :, 0] = False
            with self.assertRaisesRegex(flashc.UnsupportedError, "issue #17"):
                self.fn(self.module, q, k, v, mask)

    def test_unsupported_options(self):
        with self.assertRaisesRegex(flashc.UnsupportedError, "dropout"):
            self.call(dropout=0.1)
        self.call(dropout=0.0)
        for name in ("s_aux", "position_bias"):
            with self.assertRaisesRegex(flashc.UnsupportedError, name):
                self.call(**{name: torch.zeros(1)})
        with self.assertRaisesRegex(flashc.UnsupportedError, "issue #17"):
            self.call(cu_seq_lens_q=torch.tensor([0, 3, 6]), cu_seq_lens_k=torch.tensor([0, 3, 6]))
        q, k, v = qkv(seq_q=6, seq_k=4)
        with self.assertRaisesRegex(flashc.UnsupportedError, "fewer keys"):
            self.fn(self.module, q, k, v, None)
        self.fn(types.SimpleNamespace(is_causal=False), q, k, v, None)  # cross attention: fine

    def test_float32_policy(self):
        q, k, v = qkv(dtype=torch.float32)
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "bfloat16 or float16"):
            self.fn(self.module, q, k, v, None)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out, _ = self.fn(self.module, q, k, v, None)
        self.assertEqual(self.rec.calls[-1]["q"].dtype, torch.bfloat16)
        self.assertEqual(out.dtype, torch.bfloat16)
        q16, k16, v16 = qkv(dtype=torch.float16)
        self.fn(self.module, q16, k16, v16, None)
        self.assertEqual(self.rec.calls[-1]["q"].dtype, torch.float16)

    def test_default_calls_flashc_torch_attention(self):
        import flashc.torch as ft
        original = ft.attention
        ft.attention = self.rec
        try:
            q, k, v = qkv()
            out, _ = fc_hf.attention_forward(self.module, q, k, v, None, scaling=0.25, sliding_window=2)
        finally:
            ft.attention = original
        self.assertEqual((self.rec.calls[-1]["scale"], self.rec.calls[-1]["window"]), (0.25, (1, 0)))
        self.assertEqual(tuple(out.shape), (2, 6, 4, 16))


@requires_transformers
class MaskFunctionTest(unittest.TestCase):
    def mask(self, **kw):
        args = dict(batch_size=2, q_length=4, kv_length=4, q_offset=0, kv_offset=0, attention_mask=None,
                    device="cpu")
        args.update(kw)
        return fc_hf.mask_function(**args)

    def test_none_for_flashc_patterns(self):
        self.assertIsNone(self.mask())
        self.assertIsNone(self.mask(attention_mask=torch.ones(2, 4, dtype=torch.bool)))
        self.assertIsNone(self.mask(q_length=1, kv_length=9, q_offset=8))  # decoding, bottom-right
        self.assertIsNone(self.mask(q_length=3, kv_length=9, q_offset=6))  # chunked prefill, bottom-right
        self.assertIsNone(self.mask(local_size=8))  # the window reaches no key
        self.assertIsNone(self.mask(q_length=3, kv_length=9, allow_is_causal_skip=False,
                                    allow_is_bidirectional_skip=True))

    def test_tensor_where_flashc_must_check(self):
        padded = torch.ones(2, 4, dtype=torch.bool)
        padded[0, 0] = False
        for kw in (dict(attention_mask=padded), dict(local_size=4), dict(allow_is_causal_skip=False),
                   dict(q_length=4, kv_length=10),  # a static cache's slots: top-left, not bottom-right
                   dict(attention_mask=torch.ones(2, 3, dtype=torch.bool))):  # keys past the 2-D mask
            m = self.mask(**kw)
            self.assertIsInstance(m, torch.Tensor, kw)
            self.assertEqual(m.dtype, torch.bool)
            self.assertEqual(m.dim(), 4)


def tiny_config(kind, **extra):
    common = dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=4, num_key_value_heads=2,
                  intermediate_size=256, vocab_size=100, attention_dropout=0.0)
    common.update(extra)
    if kind == "llama":
        return transformers.LlamaConfig(**common)
    if kind == "mistral":
        return transformers.MistralConfig(sliding_window=5, **common)
    if kind == "gemma2":
        return transformers.Gemma2Config(sliding_window=6, head_dim=32, **common)
    raise ValueError(kind)


@requires_transformers
class ModelTest(unittest.TestCase):
    """Small models with attn_implementation=<registered name> and the CPU stand-in against a reference
    implementation (sdpa; eager for Gemma 2, which sdpa does not support) sharing the weights."""

    @classmethod
    def setUpClass(cls):
        cls.calls = []

        def standin(q, k, v, **options):
            cls.calls.append(dict(q=tuple(q.shape), k=tuple(k.shape), **options))
            return reference_attention(q, k, v, **options)

        cls.name = fc_hf.register("fc_attention_cpu_test", attention=standin)

    def models(self, kind, reference="sdpa", **extra):
        # One config object each: from_config sets the attention implementation on the config it is given.
        torch.manual_seed(0)
        ref = transformers.AutoModelForCausalLM.from_config(tiny_config(kind, **extra), attn_implementation=reference,
                                                            dtype=torch.bfloat16)
        model = transformers.AutoModelForCausalLM.from_config(tiny_config(kind, **extra), attn_implementation=self.name,
                                                              dtype=torch.bfloat16)
        model.load_state_dict(ref.state_dict())
        self.assertEqual(model.config._attn_implementation, self.name)
        self.assertEqual(ref.config._attn_implementation, reference)
        return model.eval(), ref.eval()

    def assertClose(self, a, b, what):
        err = float((a.float() - b.float()).abs().max().detach())
        scale = float(b.float().abs().max().detach())
        self.assertLessEqual(err, 2e-2 * max(1.0, scale), "%s: max difference %.3g" % (what, err))

    def run_model(self, kind, reference="sdpa", seq=12, expect=None, **extra):
        model, ref = self.models(kind, reference, **extra)
        ids = torch.randint(0, 100, (2, seq), generator=torch.Generator().manual_seed(1))
        self.calls.clear()
        got = model(ids).logits
        self.assertClose(got, ref(ids).logits, kind + " logits")
        self.assertEqual(len(self.calls), 2)
        if expect:
            for call, options in zip(self.calls, expect):
                self.assertEqual({k: call[k] for k in options}, options)
        return model, ref, ids

    def test_llama(self):
        self.run_model("llama", expect=[dict(q=(2, 4, 12, 32), k=(2, 2, 12, 32), causal=True, window=None,
                                             scale=32 ** -0.5, softcap=None, enable_gqa=True)] * 2)

    def test_mistral_sliding_window(self):
        self.run_model("mistral", expect=[dict(causal=True, window=(4, 0))] * 2)

    def test_gemma2_softcap_and_windows(self):
        # Layer 0 sliding (window 6), layer 1 full; softcap 50; scaling query_pre_attn_scalar^-0.5.
        self.run_model("gemma2", reference="eager",
                       expect=[dict(window=(5, 0), softcap=50.0, scale=256 ** -0.5), dict(window=None, softcap=50.0)])

    def test_set_attn_implementation(self):
        cfg = tiny_config("llama")
        model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa", dtype=torch.bfloat16)
        model.set_attn_implementation(self.name)
        self.calls.clear()
        model(torch.zeros(1, 5, dtype=torch.long))
        self.assertEqual(len(self.calls), 2)

    def test_gradients(self):
        model, ref = self.models("llama")
        ids = torch.randint(0, 100, (2, 12), generator=torch.Generator().manual_seed(2))
        for m in (model, ref):
            m.train()
            m(ids, labels=ids).loss.backward()
        grads = dict(ref.named_parameters())
        for name, p in model.named_parameters():
            self.assertIsNotNone(p.grad, name)
            self.assertClose(p.grad, grads[name].grad, name + ".grad")

    def test_generate_with_caches(self):
        for kind in ("llama", "mistral"):
            model, ref = self.models(kind)
            ids = torch.randint(0, 100, (1, 7), generator=torch.Generator().manual_seed(3))
            for cache in ("dynamic", "static"):
                self.calls.clear()
                got = model.generate(ids, max_new_tokens=5, do_sample=False, cache_implementation=cache)
                want = ref.generate(ids, max_new_tokens=5, do_sample=False, cache_implementation=cache)
                self.assertTrue(torch.equal(got, want), "%s %s cache: %s vs %s" % (kind, cache, got, want))
                self.assertEqual(self.calls[-1]["q"][2], 1)  # decoding steps reached flashc

    def test_generate_padded_batch_is_refused(self):
        model, _ = self.models("llama")
        ids = torch.randint(0, 100, (2, 6))
        mask = torch.ones(2, 6, dtype=torch.long)
        mask[1, :2] = 0  # left padding, as generate's batched prompts have
        with torch.inference_mode(), self.assertRaisesRegex(flashc.UnsupportedError, "issue #17"):
            model.generate(ids, attention_mask=mask, max_new_tokens=2, do_sample=False)

    def test_padded_batch_is_refused(self):
        model, _ = self.models("llama")
        ids = torch.randint(0, 100, (2, 8))
        mask = torch.ones(2, 8, dtype=torch.long)
        mask[0, :3] = 0
        with self.assertRaisesRegex(flashc.UnsupportedError, r"issue #17"):
            model(ids, attention_mask=mask)
        model(ids, attention_mask=torch.ones(2, 8, dtype=torch.long))  # an all-ones mask is no padding

    def test_dropout_in_training_is_refused(self):
        model, _ = self.models("llama", attention_dropout=0.1)
        model.train()
        with self.assertRaisesRegex(flashc.UnsupportedError, "dropout"):
            model(torch.zeros(1, 4, dtype=torch.long))
        model.eval()
        model(torch.zeros(1, 4, dtype=torch.long))


if __name__ == "__main__":
    unittest.main()
