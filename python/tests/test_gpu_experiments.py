"""The flashc --experiment kernels on the GPU (configs.TEST_ATTENTION_EXPERIMENTS, TEST_FFN_EXPERIMENTS: the forms
today's defaults replaced, kept to time the two side by side, and code generation not yet a default), checked like
test_gpu_attention's and test_gpu_ffn's named configurations: float64 references over ragged shapes, outputs
poisoned.

A file of its own, so that a new experiment that faults (taking the process's CUDA context with it) leaves the
default kernels' tests unaffected: the GPU suite runs one process per file.
"""

import unittest

from _support import requires_cuda

from flashc import configs

try:
    import test_gpu_attention as established
    import test_gpu_ffn as established_ffn
    from _gpu import setup_gpu_suite
except ImportError:
    pass


@requires_cuda
class ExperimentGpuTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        setup_gpu_suite()

    def test_experiments_over_ragged_shapes(self):
        for config in configs.TEST_ATTENTION_EXPERIMENTS:
            for batch, seq_q, seq_k in established.SHAPES:
                with self.subTest(config=config.describe(), batch=batch, seq_q=seq_q, seq_k=seq_k):
                    established.check_against_reference(self, config, batch, seq_q, seq_k)

    def test_ffn_experiments_over_ragged_rows(self):
        for config in configs.TEST_FFN_EXPERIMENTS:
            for lead in established_ffn.ROWS:
                with self.subTest(config=config.describe(), lead=lead):
                    established_ffn.check_against_reference(self, config, lead)


if __name__ == "__main__":
    unittest.main()
