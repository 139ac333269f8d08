// The device library's segment plan (segments.cuh) over ids [N] (Sq = Sk = N).
#include "flashc/device/segments.cuh"

using flashc::TensorArg;
using namespace flashc::device;

extern "C" __global__ void __launch_bounds__(kSegmentPlanThreads)
flashc_test_plan(const TensorArg ids, const TensorArg plan) {
  attention_segment_plan(ids, static_cast<int>(ids.shape[0]), static_cast<int>(ids.shape[0]), plan);
}
