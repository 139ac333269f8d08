// Umbrella header for generated kernels: the whole device library, CUDA headers only.
#pragma once
#include "flashc/device/tensor.cuh"
#include "flashc/device/types.cuh"
#include "flashc/device/smem.cuh"
#include "flashc/device/copy.cuh"
#include "flashc/device/mma.cuh"
#include "flashc/device/regtile.cuh"
#include "flashc/device/matmul.cuh"
#include "flashc/device/reduce.cuh"
#include "flashc/device/softmax.cuh"
#include "flashc/device/mask.cuh"
#include "flashc/device/backward.cuh"
#include "flashc/device/activation.cuh"
