//===- flash-opt.cpp - mlir-opt for flashc dialects and passes ------------===//
#include "flashc/Compiler/Passes.h"
#include "flashc/Compiler/Pipeline.h"
#include "flashc/Dialect/Flash/IR/FlashDialect.h"
#include "flashc/Dialect/Tile/IR/TileDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::flash::FlashDialect, mlir::tile::TileDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect, mlir::scf::SCFDialect,
                  mlir::tensor::TensorDialect>();
  // Upstream canonicalize, cse, ... for writing pipelines by hand.
  mlir::registerTransformsPasses();
  mlir::flash::registerFlashcPasses();
  mlir::flash::registerFlashcPipelines();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "flashc optimizer driver\n", registry));
}
