"""flashc.integrations.transformers on the GPU: small bf16 transformers models (2 layers, hidden 256, 8 query heads,
2 key/value heads, head dim 64) with attn_implementation=<flashc's name> against the same weights with sdpa (eager
for Gemma 2, which sdpa does not support) in bf16 (the baseline) and in float32 (the reference): flashc's logits and
parameter gradients must be within twice the bf16 baseline's error against float32 (plus a floor).

Models: Llama (causal, GQA), Mistral (sliding_window 64 over 200 tokens: window (63, 0)), Gemma 2 (softcap 50,
scaling 256^-0.5, a sliding and a full layer), and cached decoding (one query over a growing key cache).

Needs transformers (skips loudly without it: the GPU machine may not have it) and the bundles of the
"tests-transformers" set (python -m flashc.prebuild --out DIR tests-transformers; FLASHC_BUNDLE_PATH=DIR) or the
compiler.
"""

import importlib.util
import unittest

from _support import requires_cuda, requires_runtime, skip_loudly

HAVE_TRANSFORMERS = importlib.util.find_spec("transformers") is not None

try:
    import torch
    from _gpu import assert_close_to_reference, setup_gpu_suite
    if HAVE_TRANSFORMERS:
        import transformers
        from flashc.integrations import transformers as fc_hf
except ImportError:
    pass

DEVICE = "cuda"
SEQ = 200  # longer than the window (64), not a multiple of the kernels' tiles
VOCAB = 1000


def requires_transformers(cls):
    if HAVE_TRANSFORMERS:
        return cls
    return skip_loudly("transformers is not installed: %s skipped" % cls.__name__)(cls)


def config(kind):
    common = dict(num_hidden_layers=2, hidden_size=256, intermediate_size=512, num_attention_heads=8,
                  num_key_value_heads=2, head_dim=64, vocab_size=VOCAB, attention_dropout=0.0,
                  max_position_embeddings=1024)
    if kind == "llama":
        return transformers.LlamaConfig(**common)
    if kind == "mistral":
        return transformers.MistralConfig(sliding_window=64, **common)
    if kind == "gemma2":  # layer 0 sliding, layer 1 full; attn_logit_softcapping 50, query_pre_attn_scalar 256
        return transformers.Gemma2Config(sliding_window=64, **common)
    raise ValueError(kind)


def synchronize():
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def new_cache(model_config):
    try:
        return transformers.DynamicCache(config=model_config)  # sliding layers keep only their window
    except TypeError:  # older transformers
        return transformers.DynamicCache()


def cache_kwarg(model, cache):
    """The cache argument by its name in this transformers version (past_key_values, renamed cache)."""
    import inspect
    name = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    return {name: cache}


@requires_transformers
@requires_runtime
@requires_cuda
class TransformersGpuTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        setup_gpu_suite()
        cls.name = fc_hf.register()

    def models(self, kind):
        """(flashc bf16, baseline bf16, reference float32) models with the same weights."""
        reference_impl = "eager" if kind == "gemma2" else "sdpa"
        torch.manual_seed(0)
        ref = transformers.AutoModelForCausalLM.from_config(config(kind), attn_implementation=reference_impl,
                                                            dtype=torch.float32).to(DEVICE)
        state = ref.state_dict()
        made = []
        for impl in (self.name, reference_impl):
            m = transformers.AutoModelForCausalLM.from_config(config(kind), attn_implementation=impl,
                                                              dtype=torch.bfloat16).to(DEVICE)
            m.load_state_dict(state)
            made.append(m)
        self.assertEqual(made[0].config._attn_implementation, self.name)
        return made[0], made[1], ref

    def ids(self, seed=0):
        g = torch.Generator(device=DEVICE).manual_seed(seed)
        return torch.randint(0, VOCAB, (2, SEQ), device=DEVICE, generator=g)

    def check_forward_backward(self, kind):
        flashc_model, baseline, reference = self.models(kind)
        ids = self.ids()
        outputs = {}
        for label, m in (("flashc", flashc_model), ("baseline", baseline), ("reference", reference)):
            m.train()  # attention_dropout is 0: training mode is allowed
            out = m(ids, labels=ids)
            out.loss.backward()
            outputs[label] = (out.logits.detach(), {n: p.grad for n, p in m.named_parameters()})
        synchronize()
        logits, grads = outputs["flashc"]
        base_logits, base_grads = outputs["baseline"]
        ref_logits, ref_grads = outputs["reference"]
        self.assertEqual(logits.dtype, torch.bfloat16)
        assert_close_to_reference(self, kind + " logits", logits, base_logits, ref_logits, floor=1e-3)
        for name, ref_grad in ref_grads.items():
            self.assertIsNotNone(grads[name], name)
            assert_close_to_reference(self, "%s %s.grad" % (kind, name), grads[name], base_grads[name], ref_grad,
                                      floor=1e-3)

    def test_llama(self):
        self.check_forward_backward("llama")

    def test_mistral_sliding_window(self):
        self.check_forward_backward("mistral")

    def test_gemma2_softcap_and_windows(self):
        self.check_forward_backward("gemma2")

    def test_cached_decoding(self):
        # Prefill SEQ - 8 tokens, then one token at a time over the cache (Sq = 1, Sk growing: the bottom-right
        # alignment); the logits of the last 8 positions against the float32 model's full forward.
        for kind in ("llama", "mistral"):
            flashc_model, baseline, reference = self.models(kind)
            ids = self.ids(seed=1)[:1]
            with torch.no_grad():
                ref_logits = reference(ids).logits[:, -9:-1]
                steps = {}
                for label, m in (("flashc", flashc_model), ("baseline", baseline)):
                    m.eval()
                    cache = new_cache(m.config)
                    out = m(ids[:, :-8], use_cache=True, **cache_kwarg(m, cache))
                    logits = [out.logits[:, -1:]]
                    for t in range(SEQ - 8, SEQ - 1):  # the cache object is updated in place
                        logits.append(m(ids[:, t:t + 1], use_cache=True, **cache_kwarg(m, cache)).logits)
                    steps[label] = torch.cat(logits, dim=1)
            synchronize()
            self.assertEqual(tuple(steps["flashc"].shape), tuple(ref_logits.shape))
            assert_close_to_reference(self, kind + " decoding logits", steps["flashc"], steps["baseline"],
                                      ref_logits, floor=1e-3)

if __name__ == "__main__":
    unittest.main()
