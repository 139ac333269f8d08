// The Sᵀ backward kernel alone (flash-opt --flash-fuse-attention --flash-generate-backward=form=transposed
// on a causal D = 128 bf16 attention), so flash-plan-memory's overrides reach only its checks.
module {
  tile.kernel @attention_attention_bwd(%arg0: !tile.tensor<?x2x?x128xbf16>, %arg1: !tile.tensor<?x2x?x128xbf16>, %arg2: !tile.tensor<?x2x?x128xbf16>, %arg3: !tile.tensor<?x2x?x128xbf16>, %arg4: !tile.tensor<?x2x?xf32>, %arg5: !tile.tensor<?x2x?xf32>, %arg6: !tile.tensor<?x2x?x128xf32>, %arg7: !tile.tensor<?x2x?x128xbf16>, %arg8: !tile.tensor<?x2x?x128xbf16>) attributes {block_m = 64 : i64, block_n = 128 : i64, grid = [#tile.grid<ceildiv(arg1[2], 128)>, #tile.grid<arg1[1]>, #tile.grid<arg1[0]>], spec = #tile.attention<role = attention_backward_transposed, head_dim = 128, value_dim = 128, scale = 0.088388346135616302 : f64, softcap = 0.000000e+00 : f64, window_left = -1, window_right = 0, element_type = bf16>, stages = 2 : i64, strategy = #tile.strategy<wgmma_sm90>, warps = 8 : i64} {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c0 = arith.constant 0 : index
    %c128 = arith.constant 128 : index
    %0 = tile.program_id x
    %1 = tile.program_id y
    %2 = tile.program_id z
    %3 = tile.dim %arg0, 2 : <?x2x?x128xbf16>
    %4 = tile.dim %arg1, 2 : <?x2x?x128xbf16>
    %5 = arith.subi %4, %3 : index
    %6 = tile.dim %arg1, 1 : <?x2x?x128xbf16>
    %7 = tile.dim %arg0, 1 : <?x2x?x128xbf16>
    %8 = arith.divui %7, %6 : index
    %9 = arith.muli %0, %c128 : index
    %10 = tile.load %arg1[%2, %1, %9, %c0] limit[%4, %c128] : <?x2x?x128xbf16> -> <128x128xbf16, shared>
    %11 = tile.load %arg2[%2, %1, %9, %c0] limit[%4, %c128] : <?x2x?x128xbf16> -> <128x128xbf16, shared>
    %12 = arith.subi %9, %5 : index
    %13 = arith.maxsi %c0, %12 : index
    %14 = arith.floordivsi %13, %c64 : index
    %15 = arith.ceildivsi %3, %c64 : index
    %16 = tile.fill 0.000000e+00 : <128x128xf32, register>
    %17 = tile.fill 0.000000e+00 : <128x128xf32, register>
    %18:2 = scf.for %arg9 = %c0 to %8 step %c1 iter_args(%arg10 = %16, %arg11 = %17) -> (!tile.tile<128x128xf32, register>, !tile.tile<128x128xf32, register>) {
      %21 = arith.muli %1, %8 : index
      %22 = arith.addi %21, %arg9 : index
      %23:2 = scf.for %arg12 = %14 to %15 step %c1 iter_args(%arg13 = %arg10, %arg14 = %arg11) -> (!tile.tile<128x128xf32, register>, !tile.tile<128x128xf32, register>) {
        %24 = arith.muli %arg12, %c64 : index
        %25 = tile.load %arg0[%2, %22, %24, %c0] limit[%3, %c128] {buffers = 2 : i64} : <?x2x?x128xbf16> -> <64x128xbf16, shared>
        %26 = tile.load %arg3[%2, %22, %24, %c0] limit[%3, %c128] {buffers = 2 : i64} : <?x2x?x128xbf16> -> <64x128xbf16, shared>
        %27 = tile.load_rows %arg4[%2, %22, %24] limit %3 : <?x2x?xf32> -> <64xf32, shared>
        %28 = tile.load_rows %arg5[%2, %22, %24] limit %3 : <?x2x?xf32> -> <64xf32, shared>
        %29 = tile.fill 0.000000e+00 : <128x64xf32, register>
        %30 = tile.matmul %10, %25, %29 transpose_b : <128x128xbf16, shared>, <64x128xbf16, shared> -> <128x64xf32, register>
        %31 = arith.addi %9, %c128 : index
        %32 = arith.cmpi sgt, %31, %4 : index
        %33 = arith.addi %24, %5 : index
        %34 = arith.subi %31, %c1 : index
        %35 = arith.cmpi sgt, %34, %33 : index
        %36 = arith.ori %32, %35 : i1
        %37 = scf.if %36 -> (!tile.tile<128x64xf32, register>) {
          %50 = tile.mask %30 rows %24 cols %9 limit %4 offset %5 window[-1, 0] transposed : <128x64xf32, register>
          scf.yield %50 : !tile.tile<128x64xf32, register>
        } else {
          scf.yield %30 : !tile.tile<128x64xf32, register>
        }
        %38 = tile.recompute_probs %37, %27 scale 0.088388346135616302 : <128x64xf32, register>, <64xf32, shared>
        %39 = tile.convert %38 : <128x64xf32, register> -> <128x64xbf16, register>
        %40 = tile.matmul %39, %26, %arg14 : <128x64xbf16, register>, <64x128xbf16, shared> -> <128x128xf32, register>
        %41 = tile.fill 0.000000e+00 : <128x64xf32, register>
        %42 = tile.matmul %11, %26, %41 transpose_b : <128x128xbf16, shared>, <64x128xbf16, shared> -> <128x64xf32, register>
        %43 = tile.softmax_grad %38, %42, %28 : <128x64xf32, register>, <64xf32, shared>
        %44 = tile.scale %43 by 0.088388346135616302 : <128x64xf32, register>
        %45 = tile.convert %44 : <128x64xf32, register> -> <128x64xbf16, register>
        %46 = tile.matmul %45, %25, %arg13 : <128x64xbf16, register>, <64x128xbf16, shared> -> <128x128xf32, register>
        %47 = tile.fill 0.000000e+00 : <64x128xf32, register>
        %48 = tile.copy %45 : <128x64xbf16, register> -> <128x64xbf16, shared>
        %49 = tile.matmul %48, %10, %47 transpose_a : <128x64xbf16, shared>, <128x128xbf16, shared> -> <64x128xf32, register>
        tile.atomic_add %49, %arg6[%2, %22, %24, %c0] limit[%3, %c128] : <64x128xf32, register>, <?x2x?x128xf32>
        scf.yield %46, %40 : !tile.tile<128x128xf32, register>, !tile.tile<128x128xf32, register>
      }
      scf.yield %23#0, %23#1 : !tile.tile<128x128xf32, register>, !tile.tile<128x128xf32, register>
    }
    %19 = tile.convert %18#0 : <128x128xf32, register> -> <128x128xbf16, register>
    tile.store %19, %arg7[%2, %1, %9, %c0] limit[%4, %c128] : <128x128xbf16, register>, <?x2x?x128xbf16>
    %20 = tile.convert %18#1 : <128x128xf32, register> -> <128x128xbf16, register>
    tile.store %20, %arg8[%2, %1, %9, %c0] limit[%4, %c128] : <128x128xbf16, register>, <?x2x?x128xbf16>
    tile.return
  }
}