//===- flashc.cpp - the flashc compiler driver ----------------------------===//
//
//   flashc SPEC.mlir [-o OUT] [--emit=KIND] [--arch=sm_90a,...]
//
// Exit status: 0 success; 1 the input did not compile (unreadable, parse or
// verifier error, failing or unimplemented stage); 2 bad command line.
//
//===----------------------------------------------------------------------===//
#include "Stages.h"

#include "flashc/Compiler/Pipeline.h"
#include "flashc/Compiler/Target.h"
#include "flashc/Compiler/Tuning.h"
#include "flashc/Dialect/Flash/IR/FlashDialect.h"
#include "flashc/Dialect/Tile/IR/TileDialect.h"
#include "flashc/runtime/Arch.h"
#include "flashc/runtime/KernelCache.h"
#include "flashc/runtime/Nvrtc.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <boost/program_options.hpp>

#include <iostream>
#include <string>
#include <vector>

namespace po = boost::program_options;
using mlir::flash::EmitKind;

namespace {

constexpr int kExitCompileError = 1;
constexpr int kExitUsageError = 2;

int usageError(const std::string &message) {
  llvm::errs() << "flashc: error: " << message
               << "\nRun 'flashc --help' for usage.\n";
  return kExitUsageError;
}

std::string emitKindList() {
  std::string list;
  for (EmitKind kind : mlir::flash::allEmitKinds()) {
    if (!list.empty())
      list += ", ";
    list += mlir::flash::stringifyEmitKind(kind).str();
  }
  return list;
}

/// sm_<major><minor>[a|f], at least sm_80 (the kernels need mma.sync and
/// cp.async). The arch-specific `a` targets exist for 9.0 and 10.x and newer,
/// the family `f` targets for 10.x and newer (NVRTC rejects others cryptically).
/// Returns why `arch` is not accepted, or "" when it is.
std::string archError(llvm::StringRef arch) {
  std::string bad = "unsupported --arch value '" + arch.str() + "' ";
  std::optional<flashc::rt::Arch> parsed = flashc::rt::parseArch(arch.str());
  if (!parsed || parsed->major * 10 + parsed->minor < 80)
    return bad + "(expected sm_80 or newer, e.g. sm_80, sm_90a)";
  if (parsed->suffix == 'a' && !((parsed->major == 9 && parsed->minor == 0) || parsed->major >= 10))
    return bad + "(the arch-specific 'a' targets are sm_90a and sm_100a or newer)";
  if (parsed->suffix == 'f' && parsed->major < 10)
    return bad + "(the family 'f' targets are sm_100f or newer)";
  return "";
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);

  po::options_description visible(
      "Usage: flashc SPEC.mlir [-o OUT] [--emit=KIND] [--arch=ARCH,...]\n\n"
      "Compiles a flash-dialect model spec into fused attention/FFN kernels.\n"
      "\nOptions");
  visible.add_options()                                             //
      ("help,h", "print this help and exit")                        //
      ("version", "print the version and exit")                     //
      ("output,o", po::value<std::string>()->default_value("-"),
       "output path; '-' writes to stdout")                         //
      ("emit", po::value<std::string>()->default_value("bundle"),
       ("what to produce, the last stage to run: " + emitKindList())
           .c_str())                                                //
      ("arch", po::value<std::vector<std::string>>(),
       ("GPU architectures, comma-separated or repeated (default sm_90a); each gets its own plan "
        "(known: " + flashc::knownTargetNames() + "), several make a multi-architecture bundle")
           .c_str()) //
      ("print-ir-after-all", po::bool_switch(),
       "print the IR after every pass to stderr")                   //
      ("deterministic-backward", po::bool_switch(),
       "attention backward without atomics (dQ by its own kernel)")  //
      ("backward-form", po::value<std::string>()->default_value("auto"),
       "attention backward kernels: rows, transposed (the Sᵀ form: keys as rows, Pᵀ/dSᵀ "
       "in registers) or auto (the form the target runs faster)") //
      ("tuning-table", po::value<std::string>(),
       "tuning table whose entries replace the hand rules' plans: a file, or 'none' for the hand "
       "rules only (default: each arch's built-in table, compiler/tuning/<arch>.txt; "
       "docs/tuning.md)") //
      ("print-tuning-space",
       "instead of --emit: print each tunable kernel's tuning key, programs, plan and the "
       "points of its tuning space as JSON (what python -m flashc.tune compiles)") //
      ("jobs,j", po::value<int>()->default_value(0),
       "NVRTC compiles at once: a bundle's kernels compile in parallel, one per thread "
       "(0: $FLASHC_COMPILE_JOBS, else the number of cores)") //
      ("ptxas-report", po::bool_switch(),
       "with --emit=ptx|cubin: print ptxas' register/spill report to stderr");
  po::options_description hidden;
  hidden.add_options()("input", po::value<std::vector<std::string>>(), "")
      // Retired (issue #19): named here so that old command lines say where the forms went.
      ("experiment", po::value<std::vector<std::string>>(), "")("list-experiments", "");
  po::options_description all;
  all.add(visible).add(hidden);
  po::positional_options_description positional;
  positional.add("input", -1);

  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv)
                  .options(all)
                  .positional(positional)
                  .run(),
              vm);
    po::notify(vm);
  } catch (const po::error &error) {
    return usageError(error.what());
  }

  // Help and version fail when stdout does not take them (a full device, a closed stream): the caller reads them.
  auto printed = [] {
    std::cout.flush();
    if (std::cout)
      return 0;
    std::cerr << "flashc: error: cannot write to standard output\n";
    return kExitCompileError;
  };
  if (vm.count("help")) {
    std::cout << visible << "\n";
    return printed();
  }
  if (vm.count("experiment") || vm.count("list-experiments"))
    return usageError("--experiment was retired: the forms the defaults replaced that lost "
                      "everywhere they were measured are gone (docs/design/), the others are "
                      "points of the tuning space, chosen by the tuning table (--tuning-table=FILE, "
                      "python -m flashc.tune; docs/tuning.md)");
  if (vm.count("version")) {
    // The second line identifies the device library the bundles' kernels are compiled against:
    // bundle caches (flashc.cache) key on this output, so a changed library means rebuilt bundles.
    std::string deviceDir = flashc::rt::deviceIncludeDir();
    std::cout << "flashc " << FLASHC_VERSION << " (MLIR " << LLVM_VERSION_STRING << ")\n"
              << "device library: " << deviceDir << " (fingerprint "
              << flashc::rt::directoryFingerprint(deviceDir) << ")\n"
              << flashc::builtinTuningTablesSummary() << "\n";
    return printed();
  }

  flashc::CompileOptions options;
  options.outputPath = vm["output"].as<std::string>();
  if (options.outputPath.empty())
    return usageError("-o needs a path ('-' for stdout)");
  options.printIrAfterAll = vm["print-ir-after-all"].as<bool>();
  options.pipeline.deterministicBackward = vm["deterministic-backward"].as<bool>();
  options.pipeline.backwardForm = vm["backward-form"].as<std::string>();
  if (!mlir::flash::isBackwardForm(options.pipeline.backwardForm))
    return usageError("unknown --backward-form value '" + options.pipeline.backwardForm +
                      "' (expected auto, rows or transposed)");
  options.ptxasReport = vm["ptxas-report"].as<bool>();
  options.compileJobs = vm["jobs"].as<int>();
  if (options.compileJobs < 0)
    return usageError("--jobs must be 0 (automatic) or a positive count");
  if (vm.count("tuning-table")) {
    options.pipeline.tuningTable = vm["tuning-table"].as<std::string>();
    if (options.pipeline.tuningTable.empty())
      return usageError("--tuning-table needs a file, or 'none' for the hand rules only");
    // Read now, whatever --emit stops at: a misspelt table must not pass unnoticed with --emit=graph.
    std::string error;
    if (options.pipeline.tuningTable != "none" &&
        !flashc::loadTuningTable(options.pipeline.tuningTable, /*target=*/"", error)) {
      llvm::errs() << "flashc: error: " << error << "\n";
      return kExitCompileError;
    }
  }
  options.printTuningSpace = vm.count("print-tuning-space") > 0;
  std::string emitText = vm["emit"].as<std::string>();
  std::optional<EmitKind> emit = mlir::flash::parseEmitKind(emitText);
  if (!emit)
    return usageError("unknown --emit value '" + emitText +
                      "' (expected one of: " + emitKindList() + ")");
  options.emit = *emit;
  if (vm.count("arch")) {
    options.pipeline.archs.clear();
    for (const std::string &value : vm["arch"].as<std::vector<std::string>>()) {
      llvm::SmallVector<llvm::StringRef> archs;
      llvm::StringRef(value).split(archs, ',', /*MaxSplit=*/-1,
                                   /*KeepEmpty=*/false);
      for (llvm::StringRef arch : archs) {
        arch = arch.trim();
        if (std::string why = archError(arch); !why.empty())
          return usageError(why);
        if (!flashc::lookupTarget(arch))
          return usageError(flashc::unknownTargetMessage(arch));
        if (!llvm::is_contained(options.pipeline.archs, arch.str()))
          options.pipeline.archs.push_back(arch.str());
      }
    }
    if (options.pipeline.archs.empty())
      return usageError("--arch needs at least one architecture");
  }

  // Checked after the options so that `--emit spec.mlir` reports the bad
  // --emit value rather than a missing input.
  std::vector<std::string> inputs;
  if (vm.count("input"))
    inputs = vm["input"].as<std::vector<std::string>>();
  if (inputs.empty())
    return usageError("no input file");
  if (inputs.size() > 1)
    return usageError("expected one input file, got " +
                      std::to_string(inputs.size()));

  // A bundle is a directory: without -o it goes beside the current directory,
  // named after the spec (gpt_block.mlir -> gpt_block.bundle).
  if (options.emit == EmitKind::Bundle && vm["output"].defaulted() && !options.printTuningSpace) {
    if (inputs.front() == "-")
      return usageError("a bundle compiled from standard input needs -o DIR (there is no spec name to name it after)");
    options.outputPath = llvm::sys::path::stem(inputs.front()).str() + ".bundle";
  }

  mlir::DialectRegistry registry;
  registry.insert<mlir::flash::FlashDialect, mlir::tile::TileDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect, mlir::scf::SCFDialect,
                  mlir::tensor::TensorDialect>();
  mlir::MLIRContext context(registry);
  // Diagnostics point at the spec line; the generic dump of the failing op
  // would bury the message.
  context.printOpOnDiagnostic(false);
  if (options.printIrAfterAll)
    context.disableMultithreading();

  const std::string &inputPath = inputs.front();
  // An output over the input would replace the spec it is made from (the text emits write a file at -o).
  if (options.outputPath != "-" && inputPath != "-" && llvm::sys::fs::equivalent(inputPath, options.outputPath)) {
    llvm::errs() << "flashc: error: the output '" << options.outputPath << "' is the input spec; give another -o\n";
    return kExitUsageError;
  }
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputPath, &error);
  if (!input) {
    // `error` reads "cannot open input file '<path>': <reason>".
    llvm::errs() << "flashc: error: " << error << "\n";
    return kExitCompileError;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  // Prints every diagnostic as file:line:col: error: message.
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);

  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  if (!module)
    return kExitCompileError; // parse or verifier error, already reported
  if (failed(flashc::runStages(*module, options)))
    return kExitCompileError;
  return 0;
}
