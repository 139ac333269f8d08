// A score modifier's f32 constants in the generated CUDA C++: NaN (NVRTC has no NAN macro) and infinities, and
// maximumf / minimumf, whose NaN propagates as arith's does (the C++ evaluator and flashc-run's reference alike).
// The kernels compile through NVRTC.
//
// RUN: flashc %s --emit=cuda --arch=sm_80 -o - | FileCheck %s
// RUN: flashc %s --emit=cuda --arch=sm_80 -o - | FileCheck %s --check-prefix=CONV
// RUN: flashc %s --emit=cubin --arch=sm_80 -o %t.cubin

// CHECK: struct score_mod_{{[0-9a-f]+}} {
// CHECK: static constexpr bool kDerivativeOne = false;
// CHECK-DAG: __int_as_float(0x7fc00000)
// CHECK-DAG: (-INFINITY)
// CHECK-DAG: (({{.*}} >= {{.*}} || [[A:v[0-9]+]] != [[A]]) ?
func.func @constants(%q: tensor<?x2x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>) -> tensor<?x2x?x64xbf16> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 2 score_mod {
  ^bb0(%s: f32, %i: index, %j: index):
    %nan = arith.constant 0x7FC00000 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %floor = arith.constant -4.0 : f32
    %l = math.log %s : f32                         // NaN for s < 0 ...
    %m = arith.maximumf %l, %floor : f32           // ... which maximumf keeps
    %far = arith.cmpi sgt, %j, %i : index
    %hidden = arith.select %far, %ninf, %m : f32
    %zero = arith.constant 0.0 : f32
    %neg = arith.cmpf olt, %s, %zero : f32
    %r0 = arith.select %neg, %nan, %hidden : f32
    %r = arith.addf %r0, %s : f32
    flash.yield %r : f32
  } : (tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>) -> (tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>)
  return %out : tensor<?x2x?x64xbf16>
}

// An index converted to f32 converts from 32 bits where its bounds (interval arithmetic from the indices' int
// range) fit an int (k - q) and from 64 bits where they do not (q · k).
// (q · k may leave an int: the region's arithmetic stays 64-bit.)
// CONV: using D = flashc::device::ExactIndex;
// CONV: const auto [[D:v[0-9]+]] = D::sub(k, q);
// CONV-NEXT: static_cast<float>(static_cast<int>([[D]]))
// CONV-NEXT: const auto [[P:v[0-9]+]] = D::mul(q, k);
// CONV-NEXT: static_cast<float>([[P]])
func.func @conversions(%q: tensor<?x2x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>) -> tensor<?x2x?x64xbf16> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 2 score_mod {
  ^bb0(%s: f32, %i: index, %j: index):
    %d = arith.subi %j, %i : index
    %d64 = arith.index_cast %d : index to i64
    %df = arith.sitofp %d64 : i64 to f32
    %p = arith.muli %i, %j : index
    %p64 = arith.index_cast %p : index to i64
    %pf = arith.sitofp %p64 : i64 to f32
    %tiny = arith.constant 1.0e-12 : f32
    %pt = arith.mulf %pf, %tiny : f32
    %r0 = arith.addf %s, %df : f32
    %r = arith.addf %r0, %pt : f32
    flash.yield %r : f32
  } : (tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>) -> (tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>)
  return %out : tensor<?x2x?x64xbf16>
}
