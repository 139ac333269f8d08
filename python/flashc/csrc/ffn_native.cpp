// flashc.torch.ffn's native path (flashc/_native.py builds it with torch.utils.cpp_extension): the FFN's forward and
// backward as a torch::autograd::Function in C++ that binds the tensors and launches the bundle's programs through the
// runtime's C ABI. The programs, their arguments and the outputs are flashc.torch's Python Function's (_Ffn); what is
// gone is its host cost: no Python between the call and the launch, and a backward the autograd engine runs on its
// device thread without taking the GIL (bench/results/2026-12-01-h200-session17.md: the Python path spends ~130 us a
// step entering and leaving its backward, ~70 binding arguments, ~35 asking for and allocating the workspace).
//
// The plan (FfnPlan) is made once per FFN configuration by flashc.torch: the bundle's handle and, for each program
// (inference forward, training forward, backward), its name and the bundle parameter that each tensor slot below
// fills. flashc.torch validates the configuration and takes this path only where every width is whole 16-byte rows.
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/utils/pybind.h>

#include <array>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "flashc/flashc.h"

namespace {

// The tensors a program reads or writes, by role (flashc.torch._ffn_inputs' logical names; a gated FFN's up
// projection takes the w1 slots, as in flashc.torch.ffn's signature).
enum Slot : int {
  kX, kW1, kB1, kW2, kB2, kWGate,     // inputs (in the kernels' layout)
  kSaved0, kSaved1, kSaved2,          // the training forward's activations (FfnConfig.saved_names())
  kY, kDy,                            // output, its gradient
  kDx, kDw1, kDb1, kDw2, kDb2, kDwGate, // gradients
  kSlots
};
using Tensors = std::array<at::Tensor, kSlots>;

// A launch's failure: the runtime's status (flashc_status) and message; Python raises flashc's error class for it in the
// forward (the pybind translator below). In the backward the autograd engine passes it on as a RuntimeError with
// this message.
struct LaunchError : std::runtime_error {
  int status;
  LaunchError(int s, const std::string &message) : std::runtime_error(message), status(s) {}
};

void check(flashc_status status, const std::string &program) {
  if (status == FLASHC_OK) return;
  const char *message = flashc_last_error();
  throw LaunchError(int(status), "flashc.ffn, program '" + program + "': " + (message ? message : "unknown error"));
}

int dtypeCode(const at::Tensor &t) {
  switch (t.scalar_type()) {
  case at::kBFloat16: return FLASHC_BF16;
  case at::kHalf: return FLASHC_F16;
  case at::kFloat: return FLASHC_F32;
  case at::kInt: return FLASHC_I32;
  default: TORCH_CHECK(false, "flashc.ffn: unsupported dtype ", t.scalar_type());
  }
  return -1;
}

// FLASHC_POISON_OUTPUTS, as flashc.torch._output reads it: outputs start as NaN. Read by the forward, on the caller's
// thread (the backward, on the autograd engine's, takes the forward's reading: no getenv beside Python's setenv).
bool poisonOutputs() {
  const char *v = std::getenv("FLASHC_POISON_OUTPUTS");
  return v && *v && std::string(v) != "0";
}

at::Tensor output(at::IntArrayRef shape, const at::TensorOptions &options, bool poison) {
  at::Tensor t = at::empty(shape, options);
  if (poison) t.fill_(std::numeric_limits<float>::quiet_NaN());
  return t;
}

// t as the kernels read it (flashc.torch._kernel_layout for widths of whole 16-byte rows): last dim contiguous,
// 16-byte aligned data and row strides, else a contiguous (and aligned) copy.
at::Tensor kernelLayout(const at::Tensor &t) {
  if (!t.defined() || t.dim() == 0) return t;
  auto aligned = [](const at::Tensor &u) {
    if (reinterpret_cast<uintptr_t>(u.data_ptr()) % 16 || (u.size(-1) > 1 && u.stride(-1) != 1)) return false;
    for (int64_t i = 0; i + 1 < u.dim(); ++i)
      if (u.size(i) > 1 && (u.stride(i) * int64_t(u.element_size())) % 16) return false;
    return true;
  };
  if (aligned(t)) return t;
  at::Tensor copy = t.contiguous();
  return aligned(copy) ? copy : copy.clone();
}

// One program of the bundle: its name, the parameter each slot fills (empty: not passed), an argument handle per
// thread (the runtime's handles are not shared between threads), and its workspace size by row count (the other
// sizes are the configuration's).
class Program {
 public:
  Program(flashc_bundle bundle, std::string name, std::vector<std::string> params)
      : bundle_(bundle), name_(std::move(name)), params_(std::move(params)) {
    TORCH_CHECK(params_.size() == size_t(kSlots), "flashc: a program's parameter list has ", params_.size(),
                " entries, not ", int(kSlots));
  }
  Program(const Program &) = delete;
  ~Program() {
    for (auto &[thread, args] : handles_) flashc_args_destroy(args);
  }

  bool present() const { return !name_.empty(); }

  void launch(const Tensors &tensors, int64_t rows, c10::Device device) {
    std::array<const char *, kSlots> names;
    std::array<flashc_tensor_arg, kSlots> values;
    std::array<int, kSlots> dtypes, ranks;
    size_t count = 0;
    for (int s = 0; s < kSlots; ++s) {
      const at::Tensor &t = tensors[s];
      if (params_[s].empty() || !t.defined()) continue;
      TORCH_CHECK(t.dim() <= 4, "flashc.ffn: tensor '", params_[s], "' has rank ", t.dim());
      flashc_tensor_arg &v = values[count];
      v.data = t.data_ptr();
      for (int i = 0; i < 4; ++i) {
        v.shape[i] = i < t.dim() ? t.size(i) : 1;
        v.stride[i] = i < t.dim() ? t.stride(i) : 0;
      }
      names[count] = params_[s].c_str();
      dtypes[count] = dtypeCode(t);
      ranks[count] = int(t.dim());
      ++count;
    }
    flashc_args args = handle();
    check(flashc_args_set_tensors(args, count, names.data(), values.data(), dtypes.data(), ranks.data()), name_);
    void *stream = c10::cuda::getCurrentCUDAStream(device.index()).stream();
    uint64_t bytes = workspaceBytes(args, rows);
    if (bytes == 0) {
      check(flashc_launch(bundle_, name_.c_str(), args, stream), name_);
      return;
    }
    // Scratch from torch's caching allocator, stream-ordered like the launch (flashc.torch._allocator).
    at::Tensor workspace = at::empty({int64_t(bytes)}, at::TensorOptions().dtype(at::kByte).device(device));
    check(flashc_launch_workspace(bundle_, name_.c_str(), args, stream, workspace.data_ptr(), bytes), name_);
  }

 private:
  flashc_args handle() {
    std::lock_guard<std::mutex> lock(mutex_);
    flashc_args &args = handles_[std::this_thread::get_id()];
    if (!args) check(flashc_args_create(&args), name_);
    return args;
  }

  uint64_t workspaceBytes(flashc_args args, int64_t rows) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = workspace_.find(rows);
      if (it != workspace_.end()) return it->second;
    }
    uint64_t bytes = 0;
    check(flashc_workspace_bytes(bundle_, name_.c_str(), args, &bytes), name_);
    std::lock_guard<std::mutex> lock(mutex_);
    if (workspace_.size() >= 4096) workspace_.clear();  // many row counts: start over
    workspace_[rows] = bytes;
    return bytes;
  }

  flashc_bundle bundle_;
  std::string name_;
  std::vector<std::string> params_;
  std::mutex mutex_;
  std::unordered_map<std::thread::id, flashc_args> handles_;
  std::unordered_map<int64_t, uint64_t> workspace_;
};

// An FFN configuration's programs and sizes (flashc.validate's FfnConfig).
struct FfnPlan {
  FfnPlan(int64_t bundle, const std::string &forward, std::vector<std::string> forwardParams,
          const std::string &forwardTrain, std::vector<std::string> forwardTrainParams, const std::string &backward,
          std::vector<std::string> backwardParams, int64_t dModel, int64_t dHidden, int64_t dOut, bool gated,
          int64_t savedCount)
      : forward(reinterpret_cast<flashc_bundle>(bundle), forward, std::move(forwardParams)),
        forwardTrain(reinterpret_cast<flashc_bundle>(bundle), forwardTrain, std::move(forwardTrainParams)),
        backward(reinterpret_cast<flashc_bundle>(bundle), backward, std::move(backwardParams)), dModel(dModel),
        dHidden(dHidden), dOut(dOut), gated(gated), savedCount(savedCount) {
    TORCH_CHECK(savedCount >= 0 && savedCount <= 3, "flashc: an FFN saves 0-3 activations, not ", savedCount);
  }
  Program forward, forwardTrain, backward;
  int64_t dModel, dHidden, dOut;
  bool gated;
  int64_t savedCount;
};

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

std::vector<int64_t> leadingDims(const at::Tensor &x) {
  return std::vector<int64_t>(x.sizes().begin(), x.sizes().end() - 1);
}

std::vector<int64_t> withLast(std::vector<int64_t> lead, int64_t last) {
  lead.push_back(last);
  return lead;
}

struct FfnFunction : public torch::autograd::Function<FfnFunction> {
  // Inputs as flashc.torch.ffn takes them (b1, b2, w_gate optional: an absent one is no input of the node, whose
  // gradient is then undefined); train: the training forward, which also writes the activations the backward reads.
  using Optional = std::optional<at::Tensor>;
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &x, const at::Tensor &w1, const Optional &b1,
                            const at::Tensor &w2, const Optional &b2, const Optional &w_gate, int64_t plan_address,
                            bool train) {
    auto *plan = reinterpret_cast<FfnPlan *>(plan_address);
    c10::cuda::CUDAGuard guard(x.device());
    Tensors t;
    t[kX] = kernelLayout(x.reshape({-1, plan->dModel}));
    t[kW1] = kernelLayout(w1);
    t[kB1] = kernelLayout(b1.value_or(at::Tensor()));
    t[kW2] = kernelLayout(w2);
    t[kB2] = kernelLayout(b2.value_or(at::Tensor()));
    t[kWGate] = kernelLayout(w_gate.value_or(at::Tensor()));
    const int64_t rows = t[kX].size(0);
    const auto options = x.options();
    const bool poison = poisonOutputs();
    t[kY] = output({rows, plan->dOut}, options, poison);
    if (train)
      for (int64_t i = 0; i < plan->savedCount; ++i) t[kSaved0 + i] = output({rows, plan->dHidden}, options, poison);
    if (rows > 0) (train ? plan->forwardTrain : plan->forward).launch(t, rows, x.device());
    if (train) {
      ctx->save_for_backward({t[kX], t[kW1], t[kB1], t[kW2], t[kB2], t[kWGate], t[kSaved0], t[kSaved1], t[kSaved2]});
      ctx->saved_data["plan"] = plan_address;
      ctx->saved_data["lead"] = leadingDims(x);
      ctx->saved_data["poison"] = poison;
    }
    ctx->saved_data["train"] = train;
    ctx->set_materialize_grads(false);
    return t[kY].view(withLast(leadingDims(x), plan->dOut));
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    variable_list none(8);
    const at::Tensor &dy = grads[0];
    if (!dy.defined()) return none;  // y did not reach the loss
    // (The engine enables grad mode for create_graph: the gradients below would carry no history, as the Python
    // Function's once_differentiable refuses too.)
    TORCH_CHECK(!at::GradMode::is_enabled(), "flashc.ffn: its backward is not differentiable (a double backward, "
                                             "create_graph=True, is not supported)");
    TORCH_CHECK(ctx->saved_data["train"].toBool(),
                "flashc.ffn: a gradient was asked of a call that ran the inference forward (no input required a "
                "gradient when it was called), which saves nothing to differentiate");
    auto *plan = reinterpret_cast<FfnPlan *>(ctx->saved_data["plan"].toInt());
    std::vector<int64_t> lead = ctx->saved_data["lead"].toIntVector();
    variable_list saved = ctx->get_saved_variables();
    Tensors t;
    for (int s = kX; s <= kSaved2; ++s) t[s] = saved[s];
    c10::cuda::CUDAGuard guard(t[kX].device());
    const auto options = t[kX].options();
    const int64_t rows = t[kX].size(0);
    const bool poison = ctx->saved_data["poison"].toBool();
    t[kDx] = output(t[kX].sizes(), options, poison);
    t[kDw2] = output(t[kW2].sizes(), options, poison);
    t[kDw1] = output(t[kW1].sizes(), options, poison);  // the up projection's gradient of a gated FFN
    if (plan->gated) t[kDwGate] = output(t[kWGate].sizes(), options, poison);
    if (t[kB1].defined() && !plan->gated) t[kDb1] = output(t[kB1].sizes(), options, poison);
    if (t[kB2].defined()) t[kDb2] = output(t[kB2].sizes(), options, poison);
    if (rows == 0) {
      for (int s = kDx; s <= kDwGate; ++s)
        if (t[s].defined()) t[s].zero_();
    } else {
      t[kDy] = kernelLayout(dy.reshape({-1, plan->dOut}));
      plan->backward.launch(t, rows, t[kX].device());
    }
    return {t[kDx].view(withLast(lead, plan->dModel)), t[kDw1], t[kDb1], t[kDw2], t[kDb2], t[kDwGate],
            at::Tensor(), at::Tensor()};
  }
};

at::Tensor ffn(FfnPlan &plan, const at::Tensor &x, const at::Tensor &w1, const std::optional<at::Tensor> &b1,
               const at::Tensor &w2, const std::optional<at::Tensor> &b2, const std::optional<at::Tensor> &w_gate,
               bool train) {
  return FfnFunction::apply(x, w1, b1, w2, b2, w_gate, reinterpret_cast<int64_t>(&plan), train);
}

} // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "flashc.torch.ffn's native path (flashc/_native.py)";
  static pybind11::exception<LaunchError> launchError(m, "LaunchError", PyExc_RuntimeError);
  pybind11::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const LaunchError &e) {  // (status, message): flashc._native raises flashc's class for the status
      pybind11::object args = pybind11::make_tuple(e.status, e.what());
      PyErr_SetObject(launchError.ptr(), args.ptr());
    }
  });
  pybind11::class_<FfnPlan>(m, "FfnPlan")
      .def(pybind11::init<int64_t, const std::string &, std::vector<std::string>, const std::string &,
                          std::vector<std::string>, const std::string &, std::vector<std::string>, int64_t, int64_t,
                          int64_t, bool, int64_t>(),
           pybind11::arg("bundle"), pybind11::arg("forward"), pybind11::arg("forward_params"),
           pybind11::arg("forward_train"), pybind11::arg("forward_train_params"), pybind11::arg("backward"),
           pybind11::arg("backward_params"), pybind11::arg("d_model"), pybind11::arg("d_hidden"),
           pybind11::arg("d_out"), pybind11::arg("gated"), pybind11::arg("saved_count"));
  m.def("ffn", &ffn, pybind11::arg("plan"), pybind11::arg("x"), pybind11::arg("w1"), pybind11::arg("b1"),
        pybind11::arg("w2"), pybind11::arg("b2"), pybind11::arg("w_gate"), pybind11::arg("train"));
  m.attr("SLOTS") = pybind11::make_tuple("x", "w1", "b1", "w2", "b2", "w_gate", "saved0", "saved1", "saved2", "y",
                                         "dy", "dx", "dw1", "db1", "dw2", "db2", "dw_gate");
}
