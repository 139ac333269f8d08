// How many thread block clusters of a given size the GPU holds at once for a kernel shaped like the attention
// backward's main kernel (384 threads, ~200 KB of dynamic shared memory: one block an SM), and so how many SMs a
// cluster launch can keep busy. Session 59: the cluster form of the backward (kernel lab run 31) ran 18-36 % slower
// than the grid form; this says how much of that is SMs left idle by cluster placement (GPCs of uneven size).
// Build and run on the device: nvcc -std=c++17 -arch=sm_90a -o /tmp/occ bench/probes/cluster_occupancy.cu && /tmp/occ
#include <cstdio>
#include <cuda_runtime.h>

__global__ void __launch_bounds__(384, 1) shaped_like_backward(int* out) {
  extern __shared__ unsigned char smem[];
  if (threadIdx.x == 0 && out) out[blockIdx.x] = smem[0];
}

int main() {
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  std::printf("%s: %d SMs\n", prop.name, prop.multiProcessorCount);
  const int smem = 200 * 1024;
  cudaFuncSetAttribute(shaped_like_backward, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  cudaFuncSetAttribute(shaped_like_backward, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  for (int size : {1, 2, 4, 8, 16}) {
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(size * 64);
    config.blockDim = dim3(384);
    config.dynamicSmemBytes = smem;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = size;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    config.attrs = attr;
    config.numAttrs = 1;
    int clusters = 0;
    cudaError_t e = cudaOccupancyMaxActiveClusters(&clusters, shaped_like_backward, &config);
    std::printf("cluster of %2d: %3d clusters at once = %3d of %d SMs busy (%s)\n", size, clusters, clusters * size,
                prop.multiProcessorCount, cudaGetErrorString(e));
  }
  return 0;
}
