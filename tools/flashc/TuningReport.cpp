//===- TuningReport.cpp - flashc --print-tuning-space ---------------------===//
#include "TuningReport.h"

#include "flashc/Compiler/Tuning.h"
#include "flashc/Dialect/Tile/IR/TileOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/JSON.h"

#include <map>
#include <vector>

using namespace mlir;

namespace flashc {

void writeTuningSpace(ModuleOp module, const TargetDescription &target, llvm::raw_ostream &os) {
  // Which programs launch each kernel (the tuner times those programs).
  std::map<std::string, std::vector<std::string>> programsOf;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (!func->hasAttr(tile::kProgramAttrName))
      continue;
    func.walk([&](tile::LaunchOp launch) {
      std::vector<std::string> &programs = programsOf[launch.getKernel().str()];
      if (!llvm::is_contained(programs, func.getSymName().str()))
        programs.push_back(func.getSymName().str());
    });
  }
  llvm::json::OStream json(os, 1);
  json.object([&] {
    json.attribute("arch", target.name);
    json.attributeArray("kernels", [&] {
      for (auto kernel : module.getOps<tile::KernelOp>()) {
        ArrayRef<Type> inputs = kernel.getFunctionType().getInputs();
        std::optional<TuningKey> key = tuningKeyOf(target, kernel.getSpecAttr(), inputs);
        if (!key)
          continue;
        TuningPoint plan = pointOf(kernel);
        std::vector<TuningPoint> candidates = tuningSpace(target, kernel.getSpecAttr(), inputs);
        // The plan the kernel has (the hand rule when compiled without a
        // table) is always a candidate: the tuner's baseline.
        if (!llvm::is_contained(candidates, plan))
          candidates.insert(candidates.begin(), plan);
        // A document modifier's kernel: each warp-specialised one-tile-a-block point in the segment form (the hand
        // rule's, named) and with the table walk (segments=0), so that the tuner pairs each form with the plan it
        // suits (flash-tile and flash-generate-backward read `segments` from the entry).
        if (takesSegmentForm(kernel)) {
          // (FlexAttention's spelling, `(t[q] == t[k]) & (q >= k)`, has its causal window, and so this key, only in
          // the segment form: its table-walk kernel is keyed `none+mod`, where these points would not apply)
          auto attention = llvm::cast<tile::AttentionSpecAttr>(kernel.getSpecAttr());
          bool walkPoints = !attention.getTopLeft();
          size_t count = candidates.size();
          for (size_t i = 0; i < count; ++i) {
            TuningPoint &point = candidates[i];
            if (point.strategy != tile::Strategy::WgmmaWsSm90 || point.persistent.value_or(false) ||
                point.segments.has_value())
              continue;
            point.segments = true;
            TuningPoint walk = point;
            walk.segments = false;
            if (walkPoints && !llvm::is_contained(candidates, walk))
              candidates.push_back(walk);
          }
          // (the points named both ways may now repeat the kernel's own plan)
          std::vector<TuningPoint> unique;
          for (const TuningPoint &point : candidates)
            if (!llvm::is_contained(unique, point))
              unique.push_back(point);
          candidates = std::move(unique);
        }
        json.object([&] {
          json.attribute("kernel", kernel.getSymName());
          json.attribute("key", key->str());
          json.attributeObject("key_fields", [&] {
            json.attribute("arch", key->arch);
            json.attribute("kind", key->kind);
            json.attribute("dtype", key->dtype);
            json.attribute("shape", key->shape);
            json.attribute("mask", key->mask);
          });
          json.attributeArray("programs", [&] {
            for (const std::string &program : programsOf[kernel.getSymName().str()])
              json.value(program);
          });
          json.attribute("plan", plan.str());
          if (std::optional<std::string> entry = tuningEntryOf(kernel))
            json.attribute("entry", *entry);
          else
            json.attribute("entry", nullptr);
          json.attributeArray("candidates", [&] {
            for (const TuningPoint &point : candidates)
              json.value(point.str());
          });
        });
      }
    });
  });
  os << "\n";
}

} // namespace flashc
