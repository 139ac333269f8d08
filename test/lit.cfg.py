# -*- Python -*-
import os
import lit.formats
from lit.llvm import llvm_config

config.name = "flashc"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.flashc_obj_root, "test")
# Runtime/ and GPU/ hold ctest executables, Fuzz/ the fuzz.inputs ctest test: not lit tests.
config.excludes = ["Runtime", "GPU", "Fuzz", "Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]

config.substitutions.append(("%src_root", config.flashc_src_root))
config.substitutions.append(("%cuda_root", config.cuda_root))

llvm_config.with_system_environment(["HOME", "TMPDIR", "FLASHC_CACHE_DIR"])
# flashc caches each compiled kernel: the tests' entries go under the build tree, never the user's cache.
if not os.environ.get("FLASHC_CACHE_DIR"):
    config.environment["FLASHC_CACHE_DIR"] = os.path.join(config.test_exec_root, "kernel-cache")
llvm_config.use_default_substitutions()
# `not` at the start of a RUN line is looked up in PATH (lit substitutes it
# only after a pipe); Debian keeps it in the LLVM tools directory.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
tool_dirs = [config.flashc_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["flash-opt", "flashc", "flashc-run", "flashc-pack", "flash-eval", "flash-run-tile"],
                                   tool_dirs)
