//===- KernelBuilder.h - terse construction of tile kernels ---*- C++ -*-===//
//
// Internal to compiler/lib: wraps OpBuilder with one helper per tile op and
// the index arithmetic kernels need, so kernel builders read like the kernel.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_COMPILER_LIB_KERNELBUILDER_H
#define FLASHC_COMPILER_LIB_KERNELBUILDER_H

#include "flashc/Compiler/TileKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/DenseMap.h"

#include <limits>

namespace flashc {

class KernelBuilder {
public:
  mlir::OpBuilder &b;
  mlir::Location loc;
  mlir::tile::KernelOp kernel;

  /// Creates the kernel op (module level, at b's insertion point) and moves
  /// the insertion point into its body.
  KernelBuilder(mlir::OpBuilder &builder, mlir::Location loc, llvm::StringRef name,
                llvm::ArrayRef<mlir::Type> argTypes, llvm::ArrayRef<mlir::tile::GridAttr> grid,
                const TilePlan &plan, mlir::Attribute spec)
      : b(builder), loc(loc) {
    mlir::MLIRContext *ctx = b.getContext();
    llvm::SmallVector<mlir::Attribute> gridAttrs(grid.begin(), grid.end());
    kernel = b.create<mlir::tile::KernelOp>(
        loc, b.getStringAttr(name), mlir::TypeAttr::get(b.getFunctionType(argTypes, {})),
        /*arg_attrs=*/nullptr, /*res_attrs=*/nullptr, b.getArrayAttr(gridAttrs),
        mlir::tile::StrategyAttr::get(ctx, plan.strategy), b.getI64IntegerAttr(plan.blockM),
        b.getI64IntegerAttr(plan.blockN), b.getI64IntegerAttr(plan.warps),
        b.getI64IntegerAttr(plan.stages), /*smem_bytes=*/nullptr, spec, /*schedule=*/nullptr,
        /*grid_order=*/nullptr, /*tuning=*/nullptr, /*run_if=*/nullptr);
    entry = new mlir::Block();
    kernel.getBody().push_back(entry);
    for (mlir::Type type : argTypes)
      entry->addArgument(type, loc);
    b.setInsertionPointToStart(entry);
  }

  mlir::Value arg(unsigned i) { return entry->getArgument(i); }
  unsigned numArgs() { return entry->getNumArguments(); }
  mlir::Value lastArg() { return entry->getArguments().back(); }
  /// An i32 scalar argument as an index.
  mlir::Value toIndex(mlir::Value i32) {
    return b.create<mlir::arith::IndexCastOp>(loc, b.getIndexType(), i32);
  }

  // --- names ----------------------------------------------------------------
  /// Gives `value` a name through its defining op's location (a NameLoc around
  /// the builder's location): the CUDA emitter names the C++ variable after it,
  /// and it survives printing the tile IR with -mlir-print-debuginfo. Shared
  /// constants and block arguments keep their own location.
  mlir::Value named(llvm::StringRef name, mlir::Value value) {
    mlir::Operation *op = value.getDefiningOp();
    if (op && op->getNumResults() == 1 && !mlir::isa<mlir::arith::ConstantOp>(op))
      op->setLoc(nameLoc(name));
    return value;
  }
  mlir::Location nameLoc(llvm::StringRef name) {
    return mlir::NameLoc::get(b.getStringAttr(name), loc);
  }
  /// The location of an op with several named values (a loop: its induction
  /// variable, then its carried values): one NameLoc each, fused in order.
  mlir::Location namesLoc(llvm::ArrayRef<llvm::StringRef> names) {
    llvm::SmallVector<mlir::Location> locs;
    for (llvm::StringRef name : names)
      locs.push_back(nameLoc(name));
    return mlir::FusedLoc::get(b.getContext(), locs);
  }
  void finish() { b.create<mlir::tile::ReturnOp>(loc); }

  // --- grid ---------------------------------------------------------------
  /// A kernel whose body is one library block op (tile.decode_block, tile.varlen_block) over all its tensors at
  /// the block's (x, y, z).
  template <class BlockOp>
  static mlir::tile::KernelOp libraryBlock(mlir::OpBuilder &builder, mlir::Location loc, llvm::StringRef name,
                                           llvm::ArrayRef<mlir::Type> argTypes,
                                           llvm::ArrayRef<mlir::tile::GridAttr> grid, const TilePlan &plan,
                                           mlir::Attribute spec) {
    KernelBuilder kb(builder, loc, name, argTypes, grid, plan, spec);
    mlir::Value x = kb.programId(mlir::tile::GridAxis::X, "x"), y = kb.programId(mlir::tile::GridAxis::Y, "y"),
                z = kb.programId(mlir::tile::GridAxis::Z, "z");
    llvm::SmallVector<mlir::Value> tensors;
    for (unsigned i = 0; i < argTypes.size(); ++i)
      tensors.push_back(kb.arg(i));
    kb.b.create<BlockOp>(loc, tensors, x, y, z);
    kb.finish();
    return kb.kernel;
  }

  static mlir::tile::GridAttr gridConst(mlir::MLIRContext *ctx, int64_t value) {
    return mlir::tile::GridAttr::get(ctx, -1, 0, 1, value);
  }
  static mlir::tile::GridAttr gridDim(mlir::MLIRContext *ctx, int64_t arg, int64_t dim,
                                      int64_t divisor = 1) {
    return mlir::tile::GridAttr::get(ctx, arg, dim, divisor, 1);
  }

  // --- index arithmetic ---------------------------------------------------
  /// Index constants are created once, at the top of the kernel.
  mlir::Value idx(int64_t value) {
    auto it = constants.find(value);
    if (it != constants.end())
      return it->second;
    mlir::OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(entry);
    mlir::Value c = b.create<mlir::arith::ConstantIndexOp>(loc, value);
    constants[value] = c;
    return c;
  }
  mlir::Value add(mlir::Value x, mlir::Value y) { return b.create<mlir::arith::AddIOp>(loc, x, y); }
  /// x + c, without an op when c == 0.
  mlir::Value addConst(mlir::Value x, int64_t c) {
    if (c == 0)
      return x;
    return c > 0 ? add(x, idx(c)) : sub(x, idx(-c));
  }
  mlir::Value sub(mlir::Value x, mlir::Value y) { return b.create<mlir::arith::SubIOp>(loc, x, y); }
  mlir::Value mul(mlir::Value x, mlir::Value y) { return b.create<mlir::arith::MulIOp>(loc, x, y); }
  mlir::Value divu(mlir::Value x, mlir::Value y) {
    return b.create<mlir::arith::DivUIOp>(loc, x, y);
  }
  mlir::Value ceilDiv(mlir::Value x, mlir::Value y) {
    return b.create<mlir::arith::CeilDivSIOp>(loc, x, y);
  }
  mlir::Value floorDiv(mlir::Value x, mlir::Value y) {
    return b.create<mlir::arith::FloorDivSIOp>(loc, x, y);
  }
  mlir::Value min(mlir::Value x, mlir::Value y) {
    return b.create<mlir::arith::MinSIOp>(loc, x, y);
  }
  mlir::Value max(mlir::Value x, mlir::Value y) {
    return b.create<mlir::arith::MaxSIOp>(loc, x, y);
  }
  mlir::Value gt(mlir::Value x, mlir::Value y) {
    return b.create<mlir::arith::CmpIOp>(loc, mlir::arith::CmpIPredicate::sgt, x, y);
  }
  mlir::Value lt(mlir::Value x, mlir::Value y) {
    return b.create<mlir::arith::CmpIOp>(loc, mlir::arith::CmpIPredicate::slt, x, y);
  }
  mlir::Value orI(mlir::Value x, mlir::Value y) { return b.create<mlir::arith::OrIOp>(loc, x, y); }

  mlir::Value programId(mlir::tile::GridAxis axis, llvm::StringRef name = "") {
    mlir::Value id = b.create<mlir::tile::ProgramIdOp>(loc, b.getIndexType(), axis);
    return name.empty() ? id : named(name, id);
  }
  mlir::Value dim(mlir::Value tensor, int64_t index, llvm::StringRef name = "") {
    mlir::Value d =
        b.create<mlir::tile::DimOp>(loc, b.getIndexType(), tensor, b.getI64IntegerAttr(index));
    return name.empty() ? d : named(name, d);
  }

  // --- types --------------------------------------------------------------
  mlir::tile::TileType tile(int64_t rows, int64_t cols, mlir::Type element,
                            mlir::tile::MemorySpace space) {
    return mlir::tile::TileType::get(b.getContext(), {rows, cols}, element, space);
  }
  mlir::tile::TileType regF32(int64_t rows, int64_t cols) {
    return tile(rows, cols, b.getF32Type(), mlir::tile::MemorySpace::Register);
  }
  mlir::tile::TileType rowVector(int64_t rows) {
    return mlir::tile::TileType::get(b.getContext(), {rows}, b.getF32Type(),
                                     mlir::tile::MemorySpace::Register);
  }
  static mlir::Type elementOf(mlir::Value tensor) {
    return llvm::cast<mlir::tile::GlobalTensorType>(tensor.getType()).getElementType();
  }

  // --- tile ops -----------------------------------------------------------
  mlir::Value fill(mlir::Type type, double value) {
    return b.create<mlir::tile::FillOp>(loc, type, b.getF64FloatAttr(value));
  }
  mlir::Value negInfRow(int64_t rows) {
    return fill(rowVector(rows), -std::numeric_limits<double>::infinity());
  }
  mlir::Value load(mlir::Value tensor, mlir::ValueRange indices, mlir::Value rowLimit,
                   mlir::Value colLimit, int64_t rows, int64_t cols, int64_t buffers = 1) {
    auto type = tile(rows, cols, elementOf(tensor), mlir::tile::MemorySpace::Shared);
    auto op = b.create<mlir::tile::LoadOp>(loc, type, tensor, indices, rowLimit, colLimit, nullptr,
                                           nullptr);
    if (buffers > 1)
      op.setBuffersAttr(b.getI64IntegerAttr(buffers));
    return op;
  }
  void store(mlir::Value value, mlir::Value tensor, mlir::ValueRange indices, mlir::Value rowLimit,
             mlir::Value colLimit) {
    b.create<mlir::tile::StoreOp>(loc, value, tensor, indices, rowLimit, colLimit);
  }
  void atomicAdd(mlir::Value value, mlir::Value tensor, mlir::ValueRange indices,
                 mlir::Value rowLimit, mlir::Value colLimit) {
    b.create<mlir::tile::AtomicAddOp>(loc, value, tensor, indices, rowLimit, colLimit);
  }
  mlir::Value loadRows(mlir::Value tensor, mlir::ValueRange indices, mlir::Value limit,
                       int64_t rows) {
    return b.create<mlir::tile::LoadRowsOp>(loc, rowVector(rows), tensor, indices, limit);
  }
  void storeRows(mlir::Value value, mlir::Value tensor, mlir::ValueRange indices,
                 mlir::Value limit) {
    b.create<mlir::tile::StoreRowsOp>(loc, value, tensor, indices, limit);
  }
  mlir::Value matmul(mlir::Value a, mlir::Value bOperand, mlir::Value acc, bool transposeA,
                     bool transposeB) {
    auto op = b.create<mlir::tile::MatmulOp>(loc, acc.getType(), a, bOperand, acc);
    if (transposeA)
      op.setTransposeAAttr(b.getUnitAttr());
    if (transposeB)
      op.setTransposeBAttr(b.getUnitAttr());
    return op;
  }
  /// Converts to `element` in registers; an f32 register tile going to f32
  /// needs no op.
  mlir::Value convert(mlir::Value value, mlir::Type element) {
    auto type = llvm::cast<mlir::tile::TileType>(value.getType());
    if (type.getElementType() == element && type.isRegister())
      return value;
    auto result = mlir::tile::TileType::get(b.getContext(), type.getShape(), element,
                                            mlir::tile::MemorySpace::Register);
    return b.create<mlir::tile::ConvertOp>(loc, result, value);
  }
  mlir::Value copyToShared(mlir::Value value) {
    auto type = llvm::cast<mlir::tile::TileType>(value.getType());
    auto result = mlir::tile::TileType::get(b.getContext(), type.getShape(), type.getElementType(),
                                            mlir::tile::MemorySpace::Shared);
    return b.create<mlir::tile::CopyOp>(loc, result, value, nullptr);
  }

  /// A for loop over [lower, upper) with loop-carried values; `body` gets the
  /// induction variable and the carried values and returns the next ones.
  /// `names`: the induction variable's, then the carried values' (see namesLoc).
  llvm::SmallVector<mlir::Value>
  forLoop(mlir::Value lower, mlir::Value upper, mlir::ValueRange inits,
          llvm::function_ref<llvm::SmallVector<mlir::Value>(mlir::Value, mlir::ValueRange)> body,
          llvm::ArrayRef<llvm::StringRef> names = {}) {
    auto loop = b.create<mlir::scf::ForOp>(names.empty() ? loc : namesLoc(names), lower, upper,
                                           idx(1), inits);
    {
      mlir::OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      llvm::SmallVector<mlir::Value> next = body(loop.getInductionVar(), loop.getRegionIterArgs());
      b.create<mlir::scf::YieldOp>(loc, next);
    }
    return llvm::SmallVector<mlir::Value>(loop.getResults().begin(), loop.getResults().end());
  }

  /// `cond ? thenFn() : value` for one tile value (the else branch yields it
  /// unchanged): used to apply a mask only on boundary blocks.
  mlir::Value ifThenElse(mlir::Value cond, mlir::Value value,
                         llvm::function_ref<mlir::Value()> thenFn, llvm::StringRef name = "") {
    auto ifOp = b.create<mlir::scf::IfOp>(name.empty() ? loc : nameLoc(name),
                                          mlir::TypeRange{value.getType()}, cond,
                                          /*withElseRegion=*/true);
    {
      mlir::OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      b.create<mlir::scf::YieldOp>(loc, thenFn());
      b.setInsertionPointToStart(&ifOp.getElseRegion().front());
      b.create<mlir::scf::YieldOp>(loc, value);
    }
    return ifOp.getResult(0);
  }

private:
  mlir::Block *entry = nullptr;
  llvm::DenseMap<int64_t, mlir::Value> constants;
};

} // namespace flashc

#endif // FLASHC_COMPILER_LIB_KERNELBUILDER_H
