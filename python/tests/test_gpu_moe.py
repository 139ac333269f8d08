"""flashc.torch.moe on the GPU against float64 PyTorch math.

Bundles: python -m flashc.prebuild --out DIR tests-moe (or the compiler). Token counts 1 (fewer than the experts), 17,
300 and 3000 (experts with no token, ragged row counts); the experts are chosen on the router logits rounded to the
input's dtype, in the reference too (flash.moe's meaning for a 16-bit layer), so both sides route alike and only the
experts' arithmetic differs. The gradients of x, the router and every expert weight against float64 autograd of the
same layer with the choice held fixed (the logits' rounding passed through as identity). Wrong shapes and dtypes are
refused in the user's terms.
"""

import unittest

from _support import requires_cuda

from flashc import configs

try:
    import torch
    import flashc.torch as ft
    from flashc.errors import InvalidArgumentError
    from _gpu import missing_bundle_skip, setup_gpu_suite
except ImportError:
    pass

DTYPES = {"bf16": "bfloat16", "f16": "float16"}
ACTIVATIONS = {"silu": lambda t: torch.nn.functional.silu(t), "relu": lambda t: torch.relu(t),
               "gelu_tanh": lambda t: torch.nn.functional.gelu(t, approximate="tanh"),
               "gelu_erf": lambda t: torch.nn.functional.gelu(t)}


def make_case(config, tokens, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    dtype = getattr(torch, DTYPES[config.dtype])
    d, h, e, n = config.model_dim, config.hidden_dim, config.experts, config.out_dim
    rand = lambda *shape, scale=1.0: (torch.randn(*shape, device="cuda", generator=g) * scale).to(dtype)
    x = rand(tokens, d)
    router = rand(d, e, scale=d ** -0.5)
    w1 = rand(e, d, h, scale=d ** -0.5)
    w_up = rand(e, d, h, scale=d ** -0.5) if config.gated else None
    w2 = rand(e, h, n, scale=h ** -0.5)
    return x, router, w1, w2, w_up


def expert_sum(config, x, ids, weights, w1, w2, w_up, act_dtype, rounded=None):
    """float64 [T, d_out]: sum over each token's experts ids [T, k] of weights [T, k] times the expert's FFN of its
    row, the FFN in act_dtype; `rounded` (a dtype): the layer's own rounding points, hidden and each expert's output
    stored in it."""
    act = ACTIVATIONS[config.activation]
    y = torch.zeros(x.shape[0], config.out_dim, dtype=torch.float64, device=x.device)
    for e in range(config.experts):
        tok, slot = (ids == e).nonzero(as_tuple=True)
        if tok.numel() == 0:
            continue
        xe = x[tok].to(act_dtype)
        hidden = act(xe @ w1[e].to(act_dtype))
        if w_up is not None:
            hidden = hidden * (xe @ w_up[e].to(act_dtype))
        if rounded is not None:
            hidden = hidden.to(rounded).to(act_dtype)
        out = hidden @ w2[e].to(act_dtype)
        if rounded is not None:
            out = out.to(rounded)
        y = y.index_add(0, tok, weights[tok, slot, None] * out.double())
    return y


def route(config, logits):
    """(ids [T, k], weights [T, k]) of the scores of `logits`: the top k by logit, the scores' order (a sigmoid
    rounds to ties near 1), ties to the lower expert (a stable sort; no gradient through the choice), renormalised
    when the layer is."""
    scores = torch.sigmoid(logits) if config.gating == "sigmoid" else torch.softmax(logits, dim=1)
    _, ids = torch.sort(logits.detach(), dim=1, descending=True, stable=True)
    ids = ids[:, :config.top_k]
    top = scores.gather(1, ids)
    return ids, top / top.sum(1, keepdim=True) if config.renormalize else top


def reference(config, x, router, w1, w2, w_up, act_dtype=None):
    """y [T, d_out]: float64 experts (act_dtype: the dtype the experts' math runs in, float64 when None, else with the
    layer's rounding points); the logits rounded to x's dtype, top-k ties to the lower expert (a stable sort)."""
    logits = (x.double() @ router.double()).to(x.dtype).double()
    ids, weights = route(config, logits)
    if act_dtype is None:
        return expert_sum(config, x, ids, weights, w1, w2, w_up, torch.float64)
    return expert_sum(config, x, ids, weights, w1, w2, w_up, act_dtype, rounded=x.dtype).to(x.dtype).double()


def reference_grads(config, x, router, w1, w2, w_up, dy):
    """float64 autograd of the layer: {name: gradient} for x, router, w1, w2 (, w_up); the experts chosen on the
    logits rounded to x's dtype (the rounding's gradient: identity), no gradient through the choice."""
    leaves = {name: t.detach().double().requires_grad_() for name, t in
              (("x", x), ("router", router), ("w1", w1), ("w2", w2), ("w_up", w_up)) if t is not None}
    exact = leaves["x"] @ leaves["router"]
    ids, weights = route(config, exact + (exact.detach().to(x.dtype).double() - exact.detach()))
    y = expert_sum(config, leaves["x"], ids, weights, leaves["w1"], leaves["w2"], leaves.get("w_up"), torch.float64)
    y.backward(dy.double())
    return {name: t.grad for name, t in leaves.items()}


@requires_cuda
class MoeGpuTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        setup_gpu_suite()

    def call(self, config, x, router, w1, w2, w_up):
        try:
            return ft.moe(x, router, w1, w2, w_up=w_up, top_k=config.top_k, gating=config.gating,
                          renormalize=config.renormalize, activation=config.activation)
        except Exception as e:  # noqa: BLE001
            if type(e).__name__ == "BundleNotFoundError":
                missing_bundle_skip(self, e, optional=False)
            raise

    def test_configs(self):
        with torch.no_grad():
            for i, config in enumerate(configs.TEST_MOE):
                for j, tokens in enumerate((1, 17, 300, 3000)):
                    with self.subTest(config=config.describe(), tokens=tokens):
                        x, router, w1, w2, w_up = make_case(config, tokens, seed=10 * i + j)
                        y = self.call(config, x, router, w1, w2, w_up)
                        self.assertEqual(tuple(y.shape), (tokens, config.out_dim))
                        self.assertFalse(torch.isnan(y).any(), "NaN in y")
                        want = reference(config, x, router, w1, w2, w_up)
                        # tolerance: twice the error of the same layer in the dtype (f32 accumulation; the hidden
                        # activation, each expert's output and y rounded to it), plus a floor
                        peer = reference(config, x, router, w1, w2, w_up, act_dtype=torch.float32)
                        tol = 2 * (peer - want).abs().max().item() + 1e-3 * want.abs().max().item() + 1e-4
                        err = (y.double() - want).abs().max().item()
                        self.assertLessEqual(err, tol, "%s, %d tokens: max error %.3g (tolerance %.3g)" % (
                            config.describe(), tokens, err, tol))

    def test_saturated_sigmoid_routing(self):
        # Router logits of 20-60, where an f32 sigmoid is 1 for every expert: the experts are still the top k by
        # logit (they were the lowest-numbered, every score tied), and the router's gradient is σ(l) σ(-l), not 0.
        config = next(c for c in configs.TEST_MOE if c.gating == "sigmoid")
        x, router, w1, w2, w_up = make_case(config, 300, seed=5)
        x[:, 0], router[0, :] = 8, 5  # 40 in every logit
        router[1:, :] *= 3  # and a spread of about 3 around it
        logits = (x.double() @ router.double()).to(x.dtype).double()
        self.assertGreater(logits.topk(config.top_k, dim=1).values.min().item(), 17.0, "logits not saturating")
        with torch.no_grad():
            y = self.call(config, x, router, w1, w2, w_up)
        want = reference(config, x, router, w1, w2, w_up)
        peer = reference(config, x, router, w1, w2, w_up, act_dtype=torch.float32)
        tol = 2 * (peer - want).abs().max().item() + 1e-3 * want.abs().max().item() + 1e-4
        err = (y.double() - want).abs().max().item()
        self.assertLessEqual(err, tol, "saturated sigmoid routing: max error %.3g (tolerance %.3g)" % (err, tol))

    def test_wrong_arguments(self):
        config = configs.TEST_MOE[0]
        x, router, w1, w2, w_up = make_case(config, 5, seed=1)
        cases = [
            (lambda: ft.moe(x.float(), router, w1, w2, w_up=w_up), "must have x's dtype"),
            (lambda: ft.moe(x, router[:, :4], w1, w2, w_up=w_up), "w1 must be [experts, d, h]"),
            (lambda: ft.moe(x, router, w1, w2[:, :8], w_up=w_up), "w2 must be [experts, h, d_out]"),
            (lambda: ft.moe(x, router, w1, w2, w_up=w_up[:, :, :8]), "w_up must be w1's shape"),
            (lambda: ft.moe(x, router, w1, w2, w_up=w_up, top_k=9), "top_k must be in [1, min(32, experts)]"),
            (lambda: ft.moe(x, router, w1, w2, w_up=w_up, gating="relu"), "gating must be one of softmax, sigmoid"),
            (lambda: ft.moe(x.t(), router, w1, w2, w_up=w_up), "router must be [d, experts]"),
            (lambda: ft.moe(x.cpu(), router, w1, w2, w_up=w_up), "x must be on a CUDA device"),
            # x's shape with rows twice as far apart
            (lambda: ft.moe(torch.cat([x, x], dim=1)[:, :x.shape[1]], router, w1, w2, w_up=w_up),
             "x must be contiguous"),
        ]
        for call, words in cases:
            with self.subTest(words=words), self.assertRaises(InvalidArgumentError) as caught:
                call()
            self.assertIn(words, str(caught.exception))

    def test_gradients(self):
        # Norm-relative bounds of the dtype (flashc-run's): bf16 2e-2, f16 5e-3.
        for i, config in enumerate(configs.TEST_MOE):
            bound = 2e-2 if config.dtype == "bf16" else 5e-3
            for j, tokens in enumerate((1, 17, 300)):
                with self.subTest(config=config.describe(), tokens=tokens):
                    x, router, w1, w2, w_up = make_case(config, tokens, seed=100 + 10 * i + j)
                    leaves = [t.clone().requires_grad_() for t in (x, router, w1, w2)]
                    up = w_up.clone().requires_grad_() if w_up is not None else None
                    y = self.call(config, *leaves, up)
                    dy = torch.randn(tokens, config.out_dim, device="cuda", dtype=x.dtype)
                    # a non-contiguous dy (rows twice as far apart) is taken as well
                    wide = torch.cat([dy, dy], dim=1)[:, :config.out_dim] if j == 1 else dy
                    y.backward(wide)
                    want = reference_grads(config, x, router, w1, w2, w_up, dy)
                    got = dict(zip(("x", "router", "w1", "w2"), (t.grad for t in leaves)))
                    if up is not None:
                        got["w_up"] = up.grad
                    for name, ref in want.items():
                        g = got[name]
                        self.assertIsNotNone(g, name)
                        self.assertFalse(torch.isnan(g).any(), "NaN in d%s" % name)
                        err = ((g.double() - ref).norm() / ref.norm().clamp_min(1e-30)).item()
                        self.assertLessEqual(err, bound, "%s, %d tokens: d%s relative error %.3g (bound %.0g)" % (
                            config.describe(), tokens, name, err, bound))

    def test_gradients_of_no_tokens(self):
        config = configs.TEST_MOE[0]
        x, router, w1, w2, w_up = make_case(config, 0, seed=2)
        leaves = [t.clone().requires_grad_() for t in (x, router, w1, w2, w_up)]
        y = self.call(config, *leaves)
        y.sum().backward()
        for t in leaves:
            self.assertEqual(t.grad.abs().sum().item(), 0.0)


if __name__ == "__main__":
    unittest.main()
