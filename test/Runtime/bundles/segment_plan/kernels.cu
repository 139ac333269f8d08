// The device library's segment plan (segments.cuh) over ids [N] (Sq = Sk = N), in each of its orders.
#include "flashc/device/segments.cuh"

using flashc::TensorArg;
using namespace flashc::device;

extern "C" __global__ void __launch_bounds__(kSegmentPlanThreads)
flashc_test_plan_documents(const TensorArg ids, const TensorArg plan) {
  attention_segment_plan(ids, static_cast<int>(ids.shape[0]), static_cast<int>(ids.shape[0]), plan);
}

extern "C" __global__ void __launch_bounds__(kSegmentPlanThreads)
flashc_test_plan_longest_causal(const TensorArg ids, const TensorArg plan) {
  attention_segment_plan<kSegmentPlanThreads, kSegmentOrderLongest, true>(ids, static_cast<int>(ids.shape[0]),
                                                                          static_cast<int>(ids.shape[0]), plan);
}

extern "C" __global__ void __launch_bounds__(kSegmentPlanThreads)
flashc_test_plan_longest_whole(const TensorArg ids, const TensorArg plan) {
  attention_segment_plan<kSegmentPlanThreads, kSegmentOrderLongest, false>(ids, static_cast<int>(ids.shape[0]),
                                                                           static_cast<int>(ids.shape[0]), plan);
}
