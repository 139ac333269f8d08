"""Writes a spec whose mask_mod region is long (argv[1] = 'chain': 5000 ops, each using the last) or whose formula
doubles at every op (argv[1] = 'squares': x_{n+1} = x_n * x_n, 40 times): cuda-mask-mod-large.test."""
import sys

kind = sys.argv[1]
ops = ["    %x0 = arith.subi %i, %j : index"]
steps = 5000 if kind == "chain" else 40
for t in range(steps):
    if kind == "squares":
        ops.append("    %%x%d = arith.muli %%x%d, %%x%d : index" % (t + 1, t, t))
    elif t % 2 == 0:
        ops.append("    %%x%d = arith.muli %%x%d, %%i : index" % (t + 1, t))
    else:
        ops.append("    %%x%d = arith.addi %%x%d, %%j : index" % (t + 1, t))
t = "tensor<?x2x?x64xbf16>"
print("""func.func @long(%%q: %s, %%k: %s, %%v: %s) -> %s {
  %%out, %%lse = flash.attention %%q, %%k, %%v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 2 mask_mod {
  ^bb0(%%i: index, %%j: index):
%s
    %%z = arith.constant 0 : index
    %%c = arith.cmpi sge, %%x%d, %%z : index
    flash.yield %%c : i1
  } : (%s, %s, %s) -> (%s, tensor<?x2x?xf32>)
  return %%out : %s
}""" % (t, t, t, t, "\n".join(ops), steps, t, t, t, t, t))
