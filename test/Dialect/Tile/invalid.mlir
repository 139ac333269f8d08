// RUN: flash-opt %s -split-input-file -verify-diagnostics
// Verifier errors of the tile dialect: shapes, memory spaces, element types.

// expected-error @+1 {{!tile.tensor must have rank 1 to 4, got 5}}
func.func private @rank5(!tile.tensor<1x2x3x4x5xf32>)

// -----

func.func @f(%s: !tile.tile<32x16xf32, register>, %lse: !tile.tile<32xf32, shared>) {
  // A shared (column) vector has one value per column: 16 here.
  // expected-error @+1 {{lse must have 16 values (one per column)}}
  %p = tile.recompute_probs %s, %lse scale 1.0 : !tile.tile<32x16xf32, register>, !tile.tile<32xf32, shared>
  return
}

// -----

// expected-error @+1 {{expected memory space 'shared' or 'register', got 'global'}}
func.func private @bad_space(!tile.tile<64x64xf32, global>)

// -----

// expected-error @+1 {{!tile.tile element type must be bf16, f16 or f32, got 'i32'}}
func.func private @int_tile(!tile.tile<16x16xi32, register>)

// -----

tile.kernel @k(%a: !tile.tile<16x16xf32, register>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<mma_sync_sm80>,
    block_m = 16, block_n = 16, warps = 1, stages = 1} {
  tile.return
}
// expected-error @-5 {{argument 0 must be a !tile.tensor}}

// -----

// expected-error @+1 {{grid must list 3 axes (x, y, z), got 2}}
tile.kernel @k(%a: !tile.tensor<?x16xf32>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<mma_sync_sm80>,
    block_m = 16, block_n = 16, warps = 1, stages = 1} {
  tile.return
}

// -----

// expected-error @+1 {{grid axis 0 refers to dimension 2 of a rank-2 argument}}
tile.kernel @k(%a: !tile.tensor<?x16xf32>) attributes {
    grid = [#tile.grid<ceildiv(arg0[2], 16)>, #tile.grid<1>, #tile.grid<1>],
    strategy = #tile.strategy<mma_sync_sm80>, block_m = 16, block_n = 16, warps = 1, stages = 1} {
  tile.return
}

// -----

// expected-error @+1 {{warps must be a power of two in [1, 16], got 3}}
tile.kernel @k(%a: !tile.tensor<?x16xf32>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<mma_sync_sm80>,
    block_m = 16, block_n = 16, warps = 3, stages = 1} {
  tile.return
}

// -----

func.func @f(%t: !tile.tensor<?x16xbf16>, %i: index) {
  // expected-error @+1 {{tile element type 'f32' differs from tensor element type 'bf16' (convert first)}}
  %x = tile.load %t[%i, %i] limit [%i, %i] : !tile.tensor<?x16xbf16> -> !tile.tile<16x16xf32, shared>
  return
}

// -----

func.func @f(%t: !tile.tensor<?x16xf32>, %i: index) {
  // expected-error @+1 {{needs one index per tensor dimension (2), got 1}}
  %x = tile.load %t[%i] limit [%i, %i] : !tile.tensor<?x16xf32> -> !tile.tile<16x16xf32, shared>
  return
}

// -----

func.func @f(%t: !tile.tensor<?x16xf32>, %i: index) {
  // expected-error @+1 {{loads into shared memory}}
  %x = tile.load %t[%i, %i] limit [%i, %i] : !tile.tensor<?x16xf32> -> !tile.tile<16x16xf32, register>
  return
}

// -----

func.func @f(%a: !tile.tile<16x32xbf16, register>, %b: !tile.tile<16x32xbf16, register>) {
  %acc = tile.fill 0.0 : !tile.tile<16x16xf32, register>
  // expected-error @+1 {{operand b must be a shared tile}}
  %c = tile.matmul %a, %b, %acc transpose_b
      : !tile.tile<16x32xbf16, register>, !tile.tile<16x32xbf16, register> -> !tile.tile<16x16xf32, register>
  return
}

// -----

func.func @f(%a: !tile.tile<32x16xbf16, register>, %b: !tile.tile<32x16xbf16, shared>) {
  %acc = tile.fill 0.0 : !tile.tile<16x16xf32, register>
  // expected-error @+1 {{a transposed operand a must be a shared tile}}
  %c = tile.matmul %a, %b, %acc transpose_a
      : !tile.tile<32x16xbf16, register>, !tile.tile<32x16xbf16, shared> -> !tile.tile<16x16xf32, register>
  return
}

// -----

func.func @f(%a: !tile.tile<16x32xbf16, register>, %b: !tile.tile<16x32xbf16, shared>) {
  %acc = tile.fill 0.0 : !tile.tile<16x16xf32, register>
  // expected-error @+1 {{contraction sizes differ: 32 vs 16}}
  %c = tile.matmul %a, %b, %acc
      : !tile.tile<16x32xbf16, register>, !tile.tile<16x32xbf16, shared> -> !tile.tile<16x16xf32, register>
  return
}

// -----

func.func @f(%a: !tile.tile<16x32xbf16, register>, %b: !tile.tile<32x16xf16, shared>) {
  %acc = tile.fill 0.0 : !tile.tile<16x16xf32, register>
  // expected-error @+1 {{operands must share an element type}}
  %c = tile.matmul %a, %b, %acc
      : !tile.tile<16x32xbf16, register>, !tile.tile<32x16xf16, shared> -> !tile.tile<16x16xf32, register>
  return
}

// -----

func.func @f(%s: !tile.tile<16x16xf32, register>, %m: !tile.tile<32xf32, register>) {
  // expected-error @+1 {{running max must have 16 rows to match the tile}}
  %x = tile.row_max %s, %m : !tile.tile<16x16xf32, register>, !tile.tile<32xf32, register>
  return
}

// -----

func.func @f(%s: !tile.tile<16x16xbf16, register>, %i: index) {
  // expected-error @+1 {{scores must have element type f32}}
  %x = tile.mask %s rows %i cols %i limit %i offset %i window [-1, 0] : !tile.tile<16x16xbf16, register>
  return
}

// -----

func.func @f(%s: !tile.tile<16x16xf32, register>, %i: index) {
  // expected-error @+1 {{window sides must be >= -1}}
  %x = tile.mask %s rows %i cols %i limit %i offset %i window [-2, 0] : !tile.tile<16x16xf32, register>
  return
}

// -----

// Wider than the device library's int window arguments: was an NVRTC error.
func.func @f(%s: !tile.tile<16x16xf32, register>, %i: index) {
  // expected-error @+1 {{window sides must be at most 1073741823 (-1: unbounded)}}
  %x = tile.mask %s rows %i cols %i limit %i offset %i window [9223372036854775807, 0] : !tile.tile<16x16xf32, register>
  return
}

// -----

func.func @f(%s: !tile.tile<16x16xf32, shared>) {
  // expected-error @+1 {{source must be a register tile}}
  %x = tile.copy %s : !tile.tile<16x16xf32, shared> -> !tile.tile<16x16xf32, shared>
  return
}

// -----

func.func @f(%t: !tile.tile<16x16xbf16, register>, %d: !tile.tensor<?x16xbf16>, %i: index) {
  // expected-error @+1 {{value must have element type f32}}
  tile.atomic_add %t, %d[%i, %i] limit [%i, %i] : !tile.tile<16x16xbf16, register>, !tile.tensor<?x16xbf16>
  return
}

// -----

func.func @f(%t: !tile.tensor<?x16xf32>) {
  // expected-error @+1 {{'nope' does not name a tile.kernel}}
  tile.launch @nope(%t) : !tile.tensor<?x16xf32>
  return
}

// -----

tile.kernel @k(%a: !tile.tensor<?x16xf32>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<mma_sync_sm80>,
    block_m = 16, block_n = 16, warps = 1, stages = 1} {
  tile.return
}
func.func @f(%t: !tile.tensor<?x32xf32>) {
  // expected-error @+1 {{argument 0 has type '!tile.tensor<?x32xf32>' but kernel @k expects '!tile.tensor<?x16xf32>'}}
  tile.launch @k(%t) : !tile.tensor<?x32xf32>
  return
}

// -----

func.func @f(%n: index) {
  // expected-error @+1 {{needs one size per dynamic dimension (2), got 1}}
  %w = tile.alloc_tensor(%n) : !tile.tensor<?x4x?xf32>
  return
}

// -----

// A workspace the program says it zeroes itself, whose first kernel only adds into it.
tile.kernel @adds(%a: !tile.tensor<?x16xf32>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<mma_sync_sm80>,
    block_m = 16, block_n = 16, warps = 1, stages = 1} {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %z = tile.fill 0.0 : !tile.tile<16x16xf32, register>
  tile.atomic_add %z, %a[%c0, %c0] limit [%c16, %c16] : !tile.tile<16x16xf32, register>, !tile.tensor<?x16xf32>
  tile.return
}
func.func @f(%n: index) {
  // expected-error @+1 {{carries tile.zeroed_in_program but @adds, the first kernel launched with it, stores nothing into it}}
  %w = tile.alloc_tensor(%n) {tile.zeroed_in_program} : !tile.tensor<?x16xf32>
  tile.launch @adds(%w) : !tile.tensor<?x16xf32>
  return
}

// -----

func.func @f(%n: index) {
  // expected-error @+1 {{carries tile.zeroed_in_program but no kernel of its block is launched with it}}
  %w = tile.alloc_tensor(%n) {tile.zeroed_in_program} : !tile.tensor<?x16xf32>
  return
}

// -----

// A #tile.warp_specialized schedule belongs to a wgmma_ws_sm90 kernel only.
// expected-error @+1 {{has a #tile.warp_specialized schedule but strategy mma_sync_sm80; only wgmma_ws_sm90 kernels are warp-specialised}}
tile.kernel @k(%a: !tile.tensor<?x16xf32>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<mma_sync_sm80>,
    block_m = 128, block_n = 128, warps = 8, stages = 2,
    schedule = #tile.warp_specialized<producer_registers = 24, consumer_warpgroups = 2, consumer_registers = 240, resident = ["q"], ring = ["k", "v"], ring_stages = 2, ping_pong = true>} {
  tile.return
}

// -----

// Its ring is the plan's stages.
// expected-error @+1 {{schedule has 3 ring stages but the plan 2}}
tile.kernel @k(%a: !tile.tensor<?x16xf32>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<wgmma_ws_sm90>,
    block_m = 128, block_n = 128, warps = 8, stages = 2,
    schedule = #tile.warp_specialized<producer_registers = 24, consumer_warpgroups = 2, consumer_registers = 240, resident = ["q"], ring = ["k", "v"], ring_stages = 3, ping_pong = true>} {
  tile.return
}

// -----

// Its consumers are the plan's warps.
// expected-error @+1 {{schedule has 1 consumer warpgroups but the plan 8 warps (4 a warpgroup)}}
tile.kernel @k(%a: !tile.tensor<?x16xf32>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<wgmma_ws_sm90>,
    block_m = 128, block_n = 128, warps = 8, stages = 2,
    schedule = #tile.warp_specialized<producer_registers = 24, consumer_warpgroups = 1, consumer_registers = 240, resident = ["q"], ring = ["k", "v"], ring_stages = 2, ping_pong = true>} {
  tile.return
}

// -----

// Split by roles, each consumer warpgroup holds the plan's whole tiles: 4 warps.
// expected-error @+1 {{schedule has 2 consumer warpgroups split by roles but the plan 8 warps (4: each warpgroup holds whole tiles)}}
tile.kernel @k(%a: !tile.tensor<?x16xf32>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<wgmma_ws_sm90>,
    block_m = 64, block_n = 64, warps = 8, stages = 2,
    schedule = #tile.warp_specialized<producer_registers = 24, consumer_warpgroups = 2, consumer_registers = 240, resident = ["k", "v"], ring = ["q", "dout"], ring_stages = 2, ping_pong = false, role_split = true>} {
  tile.return
}

// -----

// Register budgets: 24 + 2 x 248 = 520 > 3 x 168 that 384 threads have at launch.
// expected-error @+1 {{#tile.warp_specialized register budgets 24 + 2 x 248 exceed the 3 x 168 registers a thread of each warpgroup has at launch (384 threads share 65536)}}
#bad_budget = #tile.warp_specialized<producer_registers = 24, consumer_warpgroups = 2, consumer_registers = 248, resident = ["q"], ring = ["k", "v"], ring_stages = 2, ping_pong = true>

// -----

// Three consumer warpgroups share the register file four ways: 24 + 3 x 168 = 528 > 4 x 128 (512 threads).
// expected-error @+1 {{#tile.warp_specialized register budgets 24 + 3 x 168 exceed the 4 x 128 registers a thread of each warpgroup has at launch (512 threads share 65536)}}
#bad_budget_three = #tile.warp_specialized<producer_registers = 24, consumer_warpgroups = 3, consumer_registers = 168, resident = ["q"], ring = ["k", "v"], ring_stages = 2, ping_pong = true>

// -----

// expected-error @+1 {{#tile.warp_specialized producer_registers must be a multiple of 8 in [24, 256] (setmaxnreg), got 20}}
#bad_producer = #tile.warp_specialized<producer_registers = 20, consumer_warpgroups = 2, consumer_registers = 240, resident = ["q"], ring = ["k", "v"], ring_stages = 2, ping_pong = true>

// -----

// expected-error @+1 {{#tile.warp_specialized operands must be named by non-empty strings, got 3 : i64}}
#bad_name = #tile.warp_specialized<producer_registers = 24, consumer_warpgroups = 2, consumer_registers = 240, resident = [3], ring = ["k", "v"], ring_stages = 2, ping_pong = true>

// -----

// Scalars (an attention's key offset) follow the tensors: the ABI's order.
// expected-error @+1 {{argument 1 is a tensor after a scalar; tensors come first}}
tile.kernel @k(%off: i32, %a: !tile.tensor<?x16xf32>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<mma_sync_sm80>,
    block_m = 16, block_n = 16, warps = 1, stages = 1} {
  tile.return
}

// -----

// expected-error @+1 {{argument 1 must be a !tile.tensor or an i32, got 'i64'}}
tile.kernel @k(%a: !tile.tensor<?x16xf32>, %off: i64) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<mma_sync_sm80>,
    block_m = 16, block_n = 16, warps = 1, stages = 1} {
  tile.return
}

// -----

// A grid reads a tensor's dims; a scalar has none.
// expected-error @+1 {{grid axis 0 refers to argument 1 but the kernel has 1 tensor arguments}}
tile.kernel @k(%a: !tile.tensor<?x16xf32>, %off: i32) attributes {
    grid = [#tile.grid<arg1[0]>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<mma_sync_sm80>,
    block_m = 16, block_n = 16, warps = 1, stages = 1} {
  tile.return
}

// -----

tile.kernel @k(%a: !tile.tensor<?x16xf32>, %off: i32) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<mma_sync_sm80>,
    block_m = 16, block_n = 16, warps = 1, stages = 1} {
  tile.return
}
func.func @f(%t: !tile.tensor<?x16xf32>) {
  // expected-error @+1 {{argument 1 has type '!tile.tensor<?x16xf32>' but kernel @k expects 'i32'}}
  tile.launch @k(%t, %t) : !tile.tensor<?x16xf32>, !tile.tensor<?x16xf32>
  return
}

// -----

// activation_grad: the pre-activation is a register tile of the gradient's shape, f32 or 16-bit (the FFN
// backward's 16-bit form); a shared one, another shape or a gradient not in f32 is refused.
func.func @f(%g: !tile.tile<64x64xf32, register>, %pre: !tile.tile<64x64xbf16, register>) {
  %ok = tile.activation_grad gelu_tanh %g, %pre : !tile.tile<64x64xf32, register>, !tile.tile<64x64xbf16, register>
  return
}

// -----

func.func @f(%g: !tile.tile<64x64xf32, register>, %pre: !tile.tile<64x64xbf16, shared>) {
  // expected-error @+1 {{pre-activation must be a register tile}}
  %r = tile.activation_grad silu %g, %pre : !tile.tile<64x64xf32, register>, !tile.tile<64x64xbf16, shared>
  return
}

// -----

func.func @f(%g: !tile.tile<64x64xf32, register>, %pre: !tile.tile<64x32xf32, register>) {
  // expected-error @+1 {{pre-activation '!tile.tile<64x32xf32, register>' must have the gradient's shape 64x64}}
  %r = tile.activation_grad silu %g, %pre : !tile.tile<64x64xf32, register>, !tile.tile<64x32xf32, register>
  return
}

// -----

func.func @f(%g: !tile.tile<64x64xbf16, register>, %pre: !tile.tile<64x64xbf16, register>) {
  // expected-error @+1 {{gradient must have element type f32}}
  %r = tile.activation_grad silu %g, %pre : !tile.tile<64x64xbf16, register>, !tile.tile<64x64xbf16, register>
  return
}

// -----

// A persistent grid order on a warp-specialised kernel that is no attention forward (no recipe here).
// expected-error @+1 {{has a persistent grid order, which only a warp-specialised attention forward or GEMM (strategy wgmma_ws_sm90, #tile.attention<role = attention_forward>, #tile.gemm<role = gemm / gated_gemm / gemm_split_k> or a #tile.moe GEMM role) takes}}
tile.kernel @ws_not_forward(%a: !tile.tensor<?x128xbf16>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], grid_order = #tile.grid_order<order = persistent, group = 1>,
    strategy = #tile.strategy<wgmma_ws_sm90>, block_m = 128, block_n = 128, warps = 8, stages = 2} {
  tile.return
}

// -----

// Head groups remap the warp-specialised backward's grid only: not a forward's.
// expected-error @+1 {{has a head_groups grid order, which only a warp-specialised attention backward's main kernel (strategy wgmma_ws_sm90, #tile.attention<role = attention_backward or attention_backward_transposed>) takes}}
tile.kernel @head_groups_forward(%q: !tile.tensor<?x8x?x128xbf16>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], grid_order = #tile.grid_order<order = head_groups, group = 4>,
    spec = #tile.attention<role = attention_forward, head_dim = 128, value_dim = 128, scale = 1.250000e-01 : f64, softcap = 0.000000e+00 : f64, window_left = -1, window_right = 0, element_type = bf16>,
    strategy = #tile.strategy<wgmma_ws_sm90>, block_m = 128, block_n = 128, warps = 8, stages = 2} {
  tile.return
}

// -----

// ... and a backward's main kernel of another strategy (mma.sync: not the library's warp-specialised backward).
// expected-error @+1 {{has a head_groups grid order, which only a warp-specialised attention backward's main kernel}}
tile.kernel @head_groups_mma_sync(%q: !tile.tensor<?x8x?x128xbf16>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], grid_order = #tile.grid_order<order = head_groups, group = 4>,
    spec = #tile.attention<role = attention_backward, head_dim = 128, value_dim = 128, scale = 1.250000e-01 : f64, softcap = 0.000000e+00 : f64, window_left = -1, window_right = 0, element_type = bf16>,
    strategy = #tile.strategy<mma_sync_sm80>, block_m = 64, block_n = 64, warps = 4, stages = 2} {
  tile.return
}

// -----

// A group of more than 64 (head, batch) pairs is refused by the attribute.
tile.kernel @head_groups_65(%q: !tile.tensor<?x8x?x128xbf16>) attributes {
    // expected-error @+1 {{#tile.grid_order group must be in [1, 64], got 65}}
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], grid_order = #tile.grid_order<order = head_groups, group = 65>,
    strategy = #tile.strategy<wgmma_ws_sm90>, block_m = 64, block_n = 128, warps = 8, stages = 2} {
  tile.return
}

// -----

// Whole warpgroups (12 warps: three consumer warpgroups) are a warp-specialised kernel's only; any other
// strategy takes a power of two.
// expected-error @+1 {{warps must be a power of two in [1, 16], got 12}}
tile.kernel @twelve_not_ws(%a: !tile.tensor<?x16xf32>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<wgmma_sm90>,
    block_m = 192, block_n = 128, warps = 12, stages = 2} {
  tile.return
}

// -----

// ... and under wgmma_ws_sm90 they stay below 16 (the producer warpgroup makes the fourth).
// expected-error @+1 {{warps must be a power of two in [1, 16] or whole warpgroups below it (wgmma_ws_sm90), got 6}}
tile.kernel @six_ws(%a: !tile.tensor<?x16xf32>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<wgmma_ws_sm90>,
    block_m = 64, block_n = 128, warps = 6, stages = 2} {
  tile.return
}

// -----

// The persistent forward has two consumer warpgroups: with three (12 warps) its tile loop spills.
// expected-error @+1 {{has a persistent grid order on 12 consumer warps; the persistent forward has two consumer warpgroups (8 warps)}}
tile.kernel @persistent_three(%q: !tile.tensor<?x8x?x64xbf16>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], grid_order = #tile.grid_order<order = persistent, group = 1>,
    spec = #tile.attention<role = attention_forward, head_dim = 64, value_dim = 64, scale = 1.250000e-01 : f64, softcap = 0.000000e+00 : f64, window_left = -1, window_right = 0, element_type = bf16>,
    strategy = #tile.strategy<wgmma_ws_sm90>, block_m = 192, block_n = 128, warps = 12, stages = 2} {
  tile.return
}

// -----

// A tuning entry's schedule knobs have fixed types: persistent (like ping_pong) is a bool.
// expected-error @+1 {{tuning attribute field 'persistent' is unknown or of the wrong type (entry and key: strings, ping_pong, persistent and resident_b: bool, group: integer)}}
tile.kernel @tuned(%a: !tile.tensor<?x128xbf16>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<mma_sync_sm80>,
    block_m = 64, block_n = 64, warps = 4, stages = 2, tuning = {entry = "table.txt:2", persistent = 1 : i64}} {
  tile.return
}

// -----

// tile.mask_mod's body follows the mask_mod rules (IndexFunction.h).
// expected-error @+1 {{the mask modifier's body takes 2 index arguments (query, key) or 4 (batch, head, query, key), then one tensor per operand; got 1 index arguments}}
tile.mask_mod @one_argument {
^bb0(%q: index):
  %c = arith.cmpi sle, %q, %q : index
  tile.yield %c : i1
}

// -----

tile.mask_mod @float_body {
^bb0(%b: index, %h: index, %q: index, %k: index):
  // expected-error @+1 {{'arith.index_cast' op is not allowed in the mask modifier's body}}
  %x = arith.index_cast %q : index to i64
  %c = arith.cmpi sle, %k, %q : index
  tile.yield %c : i1
}

// -----

// A tile.mask's modifier must be a tile.mask_mod of the module (not found later by the executor or the emitter).
func.func @mask_mod_missing(%s: !tile.tile<16x16xf32, register>, %i: index) {
  // expected-error @+1 {{'tile.mask' op mod @absent does not name a tile.mask_mod of the module}}
  %m = tile.mask %s rows %i cols %i limit %i offset %i window[-1, -1] mod @absent(%i, %i : index, index) : !tile.tile<16x16xf32, register>
  return
}

// -----

// tile.mask_mod always takes (b, h, q, k, tensors...): flash-tile gives a two-index region b and h.
// expected-error @+1 {{the mask modifier's body takes four indices (batch, head, query, key), then its tensors}}
tile.mask_mod @two_indices {
^bb0(%q: index, %k: index):
  %c = arith.cmpi sle, %k, %q : index
  tile.yield %c : i1
}

// -----

tile.mask_mod @documents {
^bb0(%b: index, %h: index, %q: index, %k: index, %ids: tensor<?xi32>):
  %a = tensor.extract %ids[%q] : tensor<?xi32>
  %c = tensor.extract %ids[%k] : tensor<?xi32>
  %x = arith.index_cast %a : i32 to index
  %y = arith.index_cast %c : i32 to index
  %e = arith.cmpi eq, %x, %y : index
  tile.yield %e : i1
}

// A use passes the batch, the head and one !tile.tensor per tensor of the modifier.
func.func @mask_mod_tensor_missing(%s: !tile.tile<16x16xf32, register>, %i: index) {
  // expected-error @+1 {{'tile.mask' op mod @documents takes (batch, head, 1 tensor(s)), got 2 argument(s)}}
  %m = tile.mask %s rows %i cols %i limit %i offset %i window[-1, -1] mod @documents(%i, %i : index, index) : !tile.tile<16x16xf32, register>
  return
}

// -----

tile.mask_mod @documents {
^bb0(%b: index, %h: index, %q: index, %k: index, %ids: tensor<?xi32>):
  %a = tensor.extract %ids[%q] : tensor<?xi32>
  %x = arith.index_cast %a : i32 to index
  %e = arith.cmpi eq, %x, %k : index
  tile.yield %e : i1
}

func.func @mask_mod_tensor_rank(%s: !tile.tile<16x16xf32, register>, %i: index, %t: !tile.tensor<?x?xi32>) {
  // expected-error @+1 {{'tile.mask' op mod @documents tensor 0 must be a !tile.tensor like 'tensor<?xi32>', got '!tile.tensor<?x?xi32>'}}
  %m = tile.mask %s rows %i cols %i limit %i offset %i window[-1, -1] mod @documents(%i, %i, %t : index, index, !tile.tensor<?x?xi32>) : !tile.tile<16x16xf32, register>
  return
}

// -----

// A block-class table is i32 [B or 1, H or 1, rows, 2 + 2 * columns].
tile.mask_mod @any {
^bb0(%b: index, %h: index, %q: index, %k: index):
  %t = arith.constant true
  tile.yield %t : i1
}

func.func @classify_table(%i: index, %table: !tile.tensor<?x?xi32>) {
  // expected-error @+1 {{'tile.classify_blocks' op table must be a rank-4 i32 !tile.tensor [B or 1, H or 1, rows, 2 + 2 * columns], got '!tile.tensor<?x?xi32>'}}
  tile.classify_blocks @any(%i, %i : index, index) queries %i keys %i row %i into %table[%i, %i] : !tile.tensor<?x?xi32>
  return
}

// -----

// A row holds its bounds, then a class and a "next shown" column per column block: 2 + 2 * columns.
tile.mask_mod @any {
^bb0(%b: index, %h: index, %q: index, %k: index):
  %t = arith.constant true
  tile.yield %t : i1
}

func.func @classify_table_width(%i: index, %table: !tile.tensor<1x1x?x7xi32>) {
  // expected-error @+1 {{'tile.classify_blocks' op table rows must be 2 + 2 * columns wide (bounds, classes, next shown), got 7}}
  tile.classify_blocks @any(%i, %i : index, index) queries %i keys %i row %i into %table[%i, %i] : !tile.tensor<1x1x?x7xi32>
  return
}

// -----

// tile.score_mod always takes (s, b, h, q, k, tensors...).
// expected-error @+1 {{the score modifier's body takes the score, four indices (batch, head, query, key), then its tensors}}
tile.score_mod @two_indices {
^bb0(%s: f32, %q: index, %k: index):
  tile.yield %s : f32
}

// -----

tile.score_mod @alibi {
^bb0(%s: f32, %b: index, %h: index, %q: index, %k: index, %slopes: tensor<8xf32>):
  %m = tensor.extract %slopes[%h] : tensor<8xf32>
  %d = arith.subi %k, %q : index
  %d64 = arith.index_cast %d : index to i64
  %f = arith.sitofp %d64 : i64 to f32
  %bias = arith.mulf %m, %f : f32
  %r = arith.addf %s, %bias : f32
  tile.yield %r : f32
}

// A tile.score passes the modifier its batch, head and tensors, of the tensor arguments' types.
func.func @score_wrong_tensor(%s: !tile.tile<16x16xf32, register>, %i: index, %t: !tile.tensor<4xf32>) {
  // expected-error @+1 {{'tile.score' op mod @alibi tensor 0 must be a !tile.tensor like 'tensor<8xf32>', got '!tile.tensor<4xf32>'}}
  %r = tile.score %s rows %i cols %i limit %i scale 0.5 mod @alibi(%i, %i, %t : index, index, !tile.tensor<4xf32>) : <16x16xf32, register>
  return
}

// -----

// A tile.score_grad's modifier must be a tile.score_mod of the module.
func.func @score_grad_missing(%g: !tile.tile<16x16xf32, register>, %s: !tile.tile<16x16xf32, register>, %i: index) {
  // expected-error @+1 {{'tile.score_grad' op mod @absent does not name a tile.score_mod of the module}}
  %r = tile.score_grad %g, %s rows %i cols %i scale 0.5 mod @absent(%i, %i : index, index) : <16x16xf32, register>
  return
}

// -----

// tile.decode_block: the tensors of its kernel's #tile.decode role (a paged split kernel: ten, the table included).
tile.kernel @decode_split(%q: !tile.tensor<?x8x1x64xbf16>, %k: !tile.tensor<?x16x2x64xbf16>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<mma_sync_sm80>,
    block_m = 16, block_n = 64, warps = 4, stages = 4,
    spec = #tile.decode<role = decode_split, head_dim = 64, value_dim = 64, queries = 1, group = 4, page_size = 16,
                        causal = true, scale = 0.125 : f64, element_type = bf16>} {
  %x = tile.program_id x
  // expected-error @+1 {{decode_split takes 10 tensors (a paged cache: the block table included), got 2}}
  tile.decode_block(%q, %k) at [%x, %x, %x] : !tile.tensor<?x8x1x64xbf16>, !tile.tensor<?x16x2x64xbf16>
  tile.return
}

// -----

tile.kernel @not_decode(%s: !tile.tensor<4xi32>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<mma_sync_sm80>,
    block_m = 16, block_n = 64, warps = 4, stages = 4} {
  %x = tile.program_id x
  // expected-error @+1 {{must be in a tile.kernel with a #tile.decode spec}}
  tile.decode_block(%s) at [%x, %x, %x] : !tile.tensor<4xi32>
  tile.return
}

// -----

// expected-error @+1 {{#tile.decode page_size must be 0 or a power of two from 16 to 256, got 48}}
func.func private @bad_decode() attributes {spec = #tile.decode<role = decode_check, head_dim = 64, value_dim = 64,
    queries = 1, group = 1, page_size = 48, causal = false, scale = 0.125 : f64, element_type = f16>}

// -----

// expected-error @+1 {{#tile.decode of an append takes queries >= 0 (0: dynamic), group 1 and no causal}}
func.func private @bad_append_group() attributes {spec = #tile.decode<role = kv_append, head_dim = 64,
    value_dim = 64, queries = 0, group = 4, page_size = 16, causal = false, scale = 1.0 : f64, element_type = bf16>}

// -----

// expected-error @+1 {{#tile.decode head dims of an append must be positive multiples of 8, got 36}}
func.func private @bad_append_dim() attributes {spec = #tile.decode<role = kv_append_check, head_dim = 36,
    value_dim = 64, queries = 1, group = 1, page_size = 0, causal = false, scale = 1.0 : f64, element_type = f16>}

// -----

// tile.decode_block of an append: (key, value, k_cache, v_cache, cache_seqlens, [block_table], status).
tile.kernel @append(%k: !tile.tensor<?x2x1x64xbf16>, %s: !tile.tensor<4xi32>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<mma_sync_sm80>,
    block_m = 4, block_n = 1, warps = 4, stages = 1,
    spec = #tile.decode<role = kv_append, head_dim = 64, value_dim = 64, queries = 1, group = 1, page_size = 16,
                        causal = false, scale = 1.0 : f64, element_type = bf16>} {
  %x = tile.program_id x
  // expected-error @+1 {{kv_append takes 7 tensors (a paged cache: the block table included), got 2}}
  tile.decode_block(%k, %s) at [%x, %x, %x] : !tile.tensor<?x2x1x64xbf16>, !tile.tensor<4xi32>
  tile.return
}

// -----

// tile.varlen_block: the tensors of its kernel's #tile.varlen role (the forward: nine).
tile.kernel @varlen_fwd(%q: !tile.tensor<?x4x64xbf16>, %k: !tile.tensor<?x4x64xbf16>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<mma_sync_sm80>,
    block_m = 192, block_n = 128, warps = 12, stages = 2,
    spec = #tile.varlen<role = varlen_forward, head_dim = 64, value_dim = 64, group = 1, block_m = 192,
                        window_left = -1, window_right = 0, scale = 0.125 : f64, softcap = 0.0 : f64,
                        element_type = bf16>} {
  %x = tile.program_id x
  // expected-error @+1 {{varlen_forward takes 9 tensors, got 2}}
  tile.varlen_block(%q, %k) at [%x, %x, %x] : !tile.tensor<?x4x64xbf16>, !tile.tensor<?x4x64xbf16>
  tile.return
}

// -----

tile.kernel @not_varlen(%s: !tile.tensor<4xi32>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<mma_sync_sm80>,
    block_m = 16, block_n = 64, warps = 4, stages = 4} {
  %x = tile.program_id x
  // expected-error @+1 {{must be in a tile.kernel with a #tile.varlen spec}}
  tile.varlen_block(%s) at [%x, %x, %x] : !tile.tensor<4xi32>
  tile.return
}

// -----

// expected-error @+1 {{#tile.varlen block_m must be 64, 128 or 192 (the rows of the tile map's tiles), got 32}}
func.func private @bad_varlen() attributes {spec = #tile.varlen<role = varlen_plan, head_dim = 64, value_dim = 64,
    group = 1, block_m = 32, window_left = -1, window_right = -1, scale = 0.125 : f64, softcap = 0.0 : f64,
    element_type = f16>}

// -----

// expected-error @+1 {{#tile.varlen role must be varlen_plan, varlen_forward, varlen_bwd_prepare, varlen_key_plan, varlen_backward or varlen_bwd_finish, got decode_check}}
func.func private @varlen_role() attributes {spec = #tile.varlen<role = decode_check, head_dim = 64, value_dim = 64,
    group = 1, block_m = 128, window_left = -1, window_right = -1, scale = 0.125 : f64, softcap = 0.0 : f64,
    element_type = f16>}

// -----

// The backward's main kernel: thirteen tensors (q, k, v, dout, lse, delta, dq_accum, dk, dv, the offsets, the key
// map, status).
tile.kernel @varlen_bwd(%q: !tile.tensor<?x4x64xbf16>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<mma_sync_sm80>,
    block_m = 128, block_n = 128, warps = 8, stages = 2,
    spec = #tile.varlen<role = varlen_backward, head_dim = 64, value_dim = 64, group = 1, block_m = 128,
                        window_left = -1, window_right = 0, scale = 0.125 : f64, softcap = 0.0 : f64,
                        element_type = bf16>} {
  %x = tile.program_id x
  // expected-error @+1 {{varlen_backward takes 13 tensors, got 1}}
  tile.varlen_block(%q) at [%x, %x, %x] : !tile.tensor<?x4x64xbf16>
  tile.return
}

// -----

tile.kernel @varlen_finish(%q: !tile.tensor<?x4x64xbf16>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<mma_sync_sm80>,
    block_m = 64, block_n = 64, warps = 4, stages = 1,
    spec = #tile.varlen<role = varlen_bwd_finish, head_dim = 64, value_dim = 64, group = 1, block_m = 64,
                        window_left = -1, window_right = 0, scale = 0.125 : f64, softcap = 0.0 : f64,
                        element_type = bf16>} {
  %x = tile.program_id x
  // expected-error @+1 {{varlen_bwd_finish takes 3 tensors, got 1}}
  tile.varlen_block(%q) at [%x, %x, %x] : !tile.tensor<?x4x64xbf16>
  tile.return
}

// -----

// tile.moe_block: the tensors of its kernel's #tile.moe role (the gated up projection: six, w_up included).
tile.kernel @moe_up(%a: !tile.tensor<?x64xbf16>, %w: !tile.tensor<8x64x96xbf16>, %g: !tile.tensor<?xi32>,
                    %h: !tile.tensor<?x96xbf16>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<wgmma_ws_sm90>,
    block_m = 128, block_n = 128, warps = 8, stages = 4,
    spec = #tile.moe<role = moe_up, experts = 8, top_k = 2, sigmoid = false, renormalize = true,
                     activation = silu, gated = true, element_type = bf16>} {
  %x = tile.program_id x
  // expected-error @+1 {{moe_up takes 6 tensors (gated: w_up included), got 4}}
  tile.moe_block(%a, %w, %g, %h) at [%x, %x, %x] : !tile.tensor<?x64xbf16>, !tile.tensor<8x64x96xbf16>, !tile.tensor<?xi32>, !tile.tensor<?x96xbf16>
  tile.return
}

// -----

tile.kernel @not_moe(%s: !tile.tensor<4xi32>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<mma_sync_sm80>,
    block_m = 16, block_n = 64, warps = 4, stages = 4} {
  %x = tile.program_id x
  // expected-error @+1 {{must be in a tile.kernel with a #tile.moe spec}}
  tile.moe_block(%s) at [%x, %x, %x] : !tile.tensor<4xi32>
  tile.return
}

// -----

// expected-error @+1 {{#tile.moe experts must be a multiple of 8 from 8 to 256, got 12}}
func.func private @moe_twelve() attributes {spec = #tile.moe<role = moe_select, experts = 12, top_k = 2,
    sigmoid = false, renormalize = false, activation = silu, gated = false, element_type = bf16>}

// -----

// expected-error @+1 {{#tile.moe top_k must be in [1, min(32, experts)], got 9}}
func.func private @moe_top9() attributes {spec = #tile.moe<role = moe_select, experts = 8, top_k = 9,
    sigmoid = false, renormalize = false, activation = silu, gated = false, element_type = bf16>}

// -----

// expected-error @+1 {{#tile.moe role must be a mixture of experts' (moe_router ... moe_combine, moe_scatter_grad ... moe_gather_grad), got gemm}}
func.func private @moe_role() attributes {spec = #tile.moe<role = gemm, experts = 8, top_k = 2,
    sigmoid = false, renormalize = false, activation = silu, gated = false, element_type = bf16>}

// -----

// expected-error @+1 {{#tile.moe element_type must be bf16 or f16}}
func.func private @moe_f32() attributes {spec = #tile.moe<role = moe_plan, experts = 8, top_k = 2,
    sigmoid = false, renormalize = false, activation = silu, gated = false, element_type = f32>}

// -----

// `train` marks what a training forward's plan and up projection save; no other role takes it.
// expected-error @+1 {{#tile.moe train applies to moe_plan and moe_up (what a training forward saves), not moe_select}}
func.func private @moe_train_select() attributes {spec = #tile.moe<role = moe_select, experts = 8, top_k = 2,
    sigmoid = false, renormalize = false, activation = silu, gated = false, element_type = bf16, train = true>}

// -----

// The training forward's up projection also stores its pre-activations (gated: gate and up): eight tensors.
tile.kernel @moe_up_train(%a: !tile.tensor<?x64xbf16>, %w: !tile.tensor<8x64x96xbf16>, %g: !tile.tensor<?xi32>,
                          %h: !tile.tensor<?x96xbf16>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<wgmma_ws_sm90>,
    block_m = 128, block_n = 128, warps = 8, stages = 4,
    spec = #tile.moe<role = moe_up, experts = 8, top_k = 2, sigmoid = false, renormalize = true,
                     activation = silu, gated = true, element_type = bf16, train = true>} {
  %x = tile.program_id x
  // expected-error @+1 {{moe_up takes 8 tensors (gated: w_up included), got 4}}
  tile.moe_block(%a, %w, %g, %h) at [%x, %x, %x] : !tile.tensor<?x64xbf16>, !tile.tensor<8x64x96xbf16>, !tile.tensor<?xi32>, !tile.tensor<?x96xbf16>
  tile.return
}

// -----

// The backward's gated activation gradient: logits, gate, up, dh, offsets, d_gate, d_up.
tile.kernel @moe_act_grad(%a: !tile.tensor<?x96xbf16>, %o: !tile.tensor<9xi32>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<wgmma_sm90>,
    block_m = 8, block_n = 1, warps = 8, stages = 1,
    spec = #tile.moe<role = moe_activation_grad, experts = 8, top_k = 2, sigmoid = false, renormalize = true,
                     activation = silu, gated = true, element_type = bf16>} {
  %x = tile.program_id x
  // expected-error @+1 {{moe_activation_grad takes 7 tensors, got 5}}
  tile.moe_block(%a, %a, %a, %o, %a) at [%x, %x, %x] : !tile.tensor<?x96xbf16>, !tile.tensor<?x96xbf16>, !tile.tensor<?x96xbf16>, !tile.tensor<9xi32>, !tile.tensor<?x96xbf16>
  tile.return
}

// -----

// #tile.run_if names a dimension of a tensor argument, and a range.
// expected-error @+1 {{run_if refers to argument 3 but the kernel has 1 tensor arguments}}
tile.kernel @run_if_arg(%a: !tile.tensor<?x64xbf16>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<mma_sync_sm80>,
    block_m = 16, block_n = 64, warps = 4, stages = 1, run_if = #tile.run_if<arg = 3, dim = 0, min = 0, max = 10>} {
  tile.return
}

// -----

// expected-error @+1 {{#tile.run_if needs 0 <= min <= max (max = -1: no upper bound), got [10, 5]}}
func.func private @run_if_range() attributes {r = #tile.run_if<arg = 0, dim = 0, min = 10, max = 5>}

// -----

// score_separable (s + A(q) + B(k)) implies a derivative of 1: it needs score_additive.
// expected-error @+1 {{#tile.attention score_separable needs score_additive (s + A(q) + B(k) has derivative 1)}}
func.func private @s() attributes {s = #tile.attention<role = attention_forward, head_dim = 64, value_dim = 64, scale = 1.250000e-01 : f64, softcap = 0.000000e+00 : f64, window_left = -1, window_right = 0, element_type = bf16, score_mod = @m, score_separable = true>}

// -----

// top_left places row i at key position i (a band modifier's window); a run-time key offset places it elsewhere.
// expected-error @+1 {{#tile.attention top_left is not combined with key_offset (both place query rows)}}
func.func private @s() attributes {s = #tile.attention<role = attention_forward, head_dim = 64, value_dim = 64, scale = 1.250000e-01 : f64, softcap = 0.000000e+00 : f64, window_left = 16, window_right = 0, element_type = bf16, key_offset = true, top_left = true>}

// -----

// The segment form (segments.cuh) is a forward's, a backward main kernel's, or their block classes': not a
// preprocess's.
// expected-error @+1 {{#tile.attention segments needs an attention_forward or a backward's main kernel with mask_blocks (a document modifier's table), or the kernel that classifies its blocks, under no window or a causal one, without a key_offset}}
func.func private @s() attributes {s = #tile.attention<role = attention_backward_preprocess, head_dim = 64, value_dim = 64, scale = 1.250000e-01 : f64, softcap = 0.000000e+00 : f64, window_left = -1, window_right = 0, element_type = bf16, segments = true>}

// -----

// ... nor under a sliding window (a document's tile keeps only a causal corner or none).
// expected-error @+1 {{#tile.attention segments needs an attention_forward}}
func.func private @s() attributes {s = #tile.attention<role = attention_forward, head_dim = 64, value_dim = 64, scale = 1.250000e-01 : f64, softcap = 0.000000e+00 : f64, window_left = 16, window_right = 0, element_type = bf16, mask_mod = @m, mask_blocks = true, segments = true>}

// -----

// The plan's kernel reads only the ids: no table, no score modifier.
// expected-error @+1 {{#tile.attention role attention_segment_plan needs a mask_mod (the document compare) and nothing else of the forward}}
func.func private @s() attributes {s = #tile.attention<role = attention_segment_plan, head_dim = 64, value_dim = 64, scale = 1.250000e-01 : f64, softcap = 0.000000e+00 : f64, window_left = -1, window_right = 0, element_type = bf16, mask_mod = @m, mask_blocks = true>}

// -----

func.func @plan_ids(%i: index, %ids: !tile.tensor<?x?xi32>, %plan: !tile.tensor<?x4xi32>) {
  // expected-error @+1 {{'tile.plan_segments' op ids must be a rank-1 i32 !tile.tensor (each token's document), got '!tile.tensor<?x?xi32>'}}
  tile.plan_segments %ids queries %i keys %i into %plan : <?x?xi32>, <?x4xi32>
  return
}

// -----

func.func @plan_rows(%i: index, %ids: !tile.tensor<?xi32>, %plan: !tile.tensor<?x3xi32>) {
  // expected-error @+1 {{'tile.plan_segments' op plan must be a [rows, 4] i32 !tile.tensor (a header, then the tile maps), got '!tile.tensor<?x3xi32>'}}
  tile.plan_segments %ids queries %i keys %i into %plan : <?xi32>, <?x3xi32>
  return
}

// -----

// A zeroed-in-program workspace launched into a kernel that takes no parameter: the launch's arity error, not a
// read past the kernel's arguments in the workspace's verifier (it crashed: the program verifies first).
tile.kernel @takes_nothing() attributes {grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>],
    strategy = #tile.strategy<mma_sync_sm80>, block_m = 16, block_n = 32, warps = 1, stages = 1} {
  tile.return
}
func.func @zeroed_into_too_few_parameters() attributes {tile.program} {
  %w = tile.alloc_tensor() {tile.zeroed_in_program} : !tile.tensor<16x32xf32>
  // expected-error @+1 {{'tile.launch' op kernel @takes_nothing takes 0 arguments, got 1}}
  tile.launch @takes_nothing(%w) : !tile.tensor<16x32xf32>
  return
}

// -----

// The same into a kernel without a body (generic form): the kernel's region error, not a crash.
func.func @zeroed_into_a_bodiless_kernel() attributes {tile.program} {
  %w = tile.alloc_tensor() {tile.zeroed_in_program} : !tile.tensor<16x32xf32>
  tile.launch @bodiless(%w) : !tile.tensor<16x32xf32>
  return
}
// expected-error @+1 {{'tile.kernel' op region #0 ('body') failed to verify constraint: region with 1 blocks}}
"tile.kernel"() <{sym_name = "bodiless", function_type = (!tile.tensor<16x32xf32>) -> (),
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<mma_sync_sm80>,
    block_m = 16, block_n = 32, warps = 1, stages = 1}> ({
}) : () -> ()

// -----

// A decode block's tensors have the ranks its role indexes (rank-1 keys were accepted, and the CPU executor read
// shape entries past their end).
tile.kernel @append_rank1(%k: !tile.tensor<?xf16>, %v: !tile.tensor<?xf16>, %kc: !tile.tensor<?xf16>,
                          %vc: !tile.tensor<?xf16>, %lens: !tile.tensor<?xi32>, %status: !tile.tensor<4xi32>)
    attributes {block_m = 4 : i64, block_n = 1 : i64,
                grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>],
                spec = #tile.decode<role = kv_append, head_dim = 8, value_dim = 8, queries = 0, group = 1,
                                    page_size = 0, causal = false, scale = 1.0 : f64, element_type = f16>,
                stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 4 : i64} {
  %x = tile.program_id x
  %y = tile.program_id y
  %z = tile.program_id z
  // expected-error @+1 {{kv_append takes a rank-4 tensor #0, got '!tile.tensor<?xf16>'}}
  tile.decode_block(%k, %v, %kc, %vc, %lens, %status) at [%x, %y, %z]
      : !tile.tensor<?xf16>, !tile.tensor<?xf16>, !tile.tensor<?xf16>, !tile.tensor<?xf16>, !tile.tensor<?xi32>,
        !tile.tensor<4xi32>
  tile.return
}

// -----

// A mixture of experts' tensors have the ranks its role indexes: the routing's ids are the routed rows' (rank 1,
// T k of them), not [T, k] (the CPU executor's permute took such a table's T for the routed rows, and left the rest
// of the rows unwritten).
tile.kernel @permute_ids_rank2(%x: !tile.tensor<?x64xbf16>, %counts: !tile.tensor<8xi32>, %ids: !tile.tensor<?x2xi32>,
                               %ranks: !tile.tensor<?xi32>, %offsets: !tile.tensor<9xi32>,
                               %permuted: !tile.tensor<?x64xbf16>)
    attributes {block_m = 8 : i64, block_n = 1 : i64,
                grid = [#tile.grid<ceildiv(arg5[0], 8)>, #tile.grid<1>, #tile.grid<1>],
                spec = #tile.moe<role = moe_permute, experts = 8, top_k = 2, sigmoid = false, renormalize = true,
                                 activation = silu, gated = false, element_type = bf16>,
                stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 8 : i64} {
  %bx = tile.program_id x
  // expected-error @+1 {{moe_permute takes a rank-1 i32 tensor #2, got '!tile.tensor<?x2xi32>'}}
  tile.moe_block(%x, %counts, %ids, %ranks, %offsets, %permuted) at [%bx, %bx, %bx]
      : !tile.tensor<?x64xbf16>, !tile.tensor<8xi32>, !tile.tensor<?x2xi32>, !tile.tensor<?xi32>, !tile.tensor<9xi32>,
        !tile.tensor<?x64xbf16>
  tile.return
}

// -----

// ... and their element types: the routing's tables i32, its weights f32 (a float table's integers were read past
// the values it holds).
tile.kernel @plan_float_offsets(%logits: !tile.tensor<?x8xbf16>, %counts: !tile.tensor<8xi32>,
                                %offsets: !tile.tensor<9xf32>, %groups: !tile.tensor<?xi32>)
    attributes {block_m = 8 : i64, block_n = 1 : i64, grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>],
                spec = #tile.moe<role = moe_plan, experts = 8, top_k = 2, sigmoid = false, renormalize = true,
                                 activation = silu, gated = false, element_type = bf16>,
                stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 8 : i64} {
  %x = tile.program_id x
  // expected-error @+1 {{moe_plan takes a rank-1 i32 tensor #2, got '!tile.tensor<9xf32>'}}
  tile.moe_block(%logits, %counts, %offsets, %groups) at [%x, %x, %x]
      : !tile.tensor<?x8xbf16>, !tile.tensor<8xi32>, !tile.tensor<9xf32>, !tile.tensor<?xi32>
  tile.return
}

// -----

// tile.require_extent: a modifier's table holds the range of the index it is read at. The index's range is q's
// dims 0-2 (batch, head, query) or k's dim 2 (key), and a static pair that fails never holds.
func.func @extent_dim(%ids: !tile.tensor<?xi32>, %q: !tile.tensor<?x4x?x64xbf16>) attributes {tile.program} {
  // expected-error @+1 {{table dimension 1 out of range for rank 1}}
  tile.require_extent %ids[1] covers %q[2] for mask_mod at query : <?xi32>, <?x4x?x64xbf16>
  return
}

// -----

func.func @extent_range(%ids: !tile.tensor<?xi32>, %q: !tile.tensor<?x4x?x64xbf16>) attributes {tile.program} {
  // expected-error @+1 {{the head index ranges over dimension 1 of a [B, H, S, D] tensor, got dimension 2}}
  tile.require_extent %ids[0] covers %q[2] for score_mod at head : <?xi32>, <?x4x?x64xbf16>
  return
}

// -----

func.func @extent_static(%slopes: !tile.tensor<2xf32>, %q: !tile.tensor<?x4x?x64xbf16>) attributes {tile.program} {
  // expected-error @+1 {{never holds: the table's dimension 0 is 2, the head index ranges over 4}}
  tile.require_extent %slopes[0] covers %q[1] for score_mod at head : <2xf32>, <?x4x?x64xbf16>
  return
}

// -----

func.func @extent_element(%t: !tile.tensor<?xbf16>, %q: !tile.tensor<?x4x?x64xbf16>) attributes {tile.program} {
  // expected-error @+1 {{table must hold i32 or f32 (a modifier's tensor), got 'bf16'}}
  tile.require_extent %t[0] covers %q[2] for mask_mod at query : <?xbf16>, <?x4x?x64xbf16>
  return
}
