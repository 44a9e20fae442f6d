// Kernels that exercise the CUDA emulator (kernels/emu/): translated by kernels/emu/translate.ts,
// compiled with the host compiler and run by emu.test.ts, which reads the `name: value` lines.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "grid_barrier.cuh"

using namespace nvcuda;

__global__ void shuffles(int* out) {
  const int lane = threadIdx.x & 31;
  int sum = lane;
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  int half = lane;  // xor within 16-lane halves
  for (int o = 8; o > 0; o >>= 1) half += __shfl_xor_sync(0xffffffffu, half, o, 16);
  const int up = __shfl_up_sync(0xffffffffu, lane, 1);
  const int down = __shfl_down_sync(0xffffffffu, lane, 3);
  const int from = __shfl_sync(0xffffffffu, lane * 10, 5);
  const double d = __shfl_xor_sync(0xffffffffu, 0.5 + lane, 1);
  const unsigned votes = __ballot_sync(0xffffffffu, lane % 3 == 0);
  int* o = out + threadIdx.x * 7;
  o[0] = sum;
  o[1] = half;
  o[2] = up;
  o[3] = down;
  o[4] = from;
  o[5] = int(d * 2);
  o[6] = int(votes);
}

// Block sum through shared memory, a 2-D block and a 2-D grid.
__global__ void block_sums(float* out, const float* x) {
  __shared__ float part[32];
  const int t = threadIdx.y * blockDim.x + threadIdx.x, n = blockDim.x * blockDim.y;
  const int block = blockIdx.y * gridDim.x + blockIdx.x;
  float v = x[block * n + t];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((t & 31) == 0) part[t >> 5] = v;
  __syncthreads();
  if (t == 0) {
    float s = 0;
    for (int w = 0; w < n / 32; w++) s += part[w];
    out[block] = s;
  }
}

// Reverses a row in dynamic shared memory.
__global__ void reverse_row(float* out, const float* x, int n) {
  extern __shared__ float row[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) row[i] = x[i];
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = row[n - 1 - i];
}

// Threads that return early drop out of later barriers (as on Volta and newer).
__global__ void early_exit(int* out) {
  __shared__ int count;
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  if (threadIdx.x >= 40) return;
  atomicAdd(&count, 1);
  __syncthreads();
  if (threadIdx.x == 0) *out = count;
}

// Half a warp at __syncthreads, the other half at __syncwarp: no barrier can complete.
__global__ void divergent_barriers(int* out) {
  if (threadIdx.x < 16)
    __syncthreads();
  else
    __syncwarp();
  *out = 1;
}

// Thread 0 reads what thread 1 writes with no barrier between: the answer depends on the order.
__global__ void racy(int* out) {
  __shared__ int slot[2];
  slot[threadIdx.x] = 0;
  __syncthreads();
  if (threadIdx.x == 1) slot[1] = 7;
  if (threadIdx.x == 0) *out = slot[1];
}

// Each block raises its flag, then waits for the other's: only blocks that run together finish.
__global__ void handshake(int* flags, int* out) {
  if (threadIdx.x != 0) return;
  flags[blockIdx.x] = 1;
  __threadfence();
  const volatile int* other = flags + (1 - blockIdx.x);
  while (*other == 0) __nanosleep(10);
  out[blockIdx.x] = 1;
}

// Block 0 waits at most 2 ms (the global timer) for a barrier of 3 blocks that only 2 reach:
// out[0] = whether the wait passed, out[1] = whether it waited the 2 ms.
__global__ void timed_wait(unsigned* word, int* out) {
  if (threadIdx.x != 0) return;
  if (blockIdx.x != 0) {
    arl::group_signal(word, 3, false);
    return;
  }
  const unsigned long long start = arl::global_ns();
  out[0] = arl::group_wait(word, arl::group_arrive(word, 3, true), 2000000ull);
  out[1] = arl::global_ns() - start >= 2000000ull;
}

__global__ void add_one(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}

// C (32, 32) = 2 A (32, 16) . B (16, 32) on the tensor cores: one warp per 16 x 16 tile of C.
// B is stored column-major.
__global__ void wmma_gemm(float* c, const __nv_bfloat16* a, const __nv_bfloat16* b, int offset) {
  const int warp = threadIdx.x / 32, tr = warp / 2, tc = warp % 2;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.0f);
  wmma::load_matrix_sync(fa, a + tr * 16 * 16 + offset, 16);
  wmma::load_matrix_sync(fb, b + tc * 16 * 16, 16);
  wmma::mma_sync(fc, fa, fb, fc);
  for (int i = 0; i < fc.num_elements; i++) fc.x[i] *= 2.0f;
  wmma::store_matrix_sync(c + tr * 16 * 32 + tc * 16, fc, 32, wmma::mem_row_major);
}

// Runs wmma_gemm on random bf16 inputs; prints the largest error against a double reference.
void run_wmma(int offset) {
  std::vector<__nv_bfloat16> a(32 * 16 + 16), b(32 * 16);
  for (size_t i = 0; i < a.size(); i++) a[i] = __float2bfloat16(float(int(i * 37 % 19) - 9) / 8);
  for (size_t i = 0; i < b.size(); i++) b[i] = __float2bfloat16(float(int(i * 53 % 23) - 11) / 4);
  __nv_bfloat16 *da = nullptr, *db = nullptr;
  float* dc = nullptr;
  cudaMalloc(&da, a.size() * 2);
  cudaMalloc(&db, b.size() * 2);
  cudaMalloc(&dc, 32 * 32 * 4);
  cudaMemcpy(da, a.data(), a.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), b.size() * 2, cudaMemcpyHostToDevice);
  wmma_gemm<<<1, 128>>>(dc, da, db, offset);
  std::vector<float> c(32 * 32);
  cudaMemcpy(c.data(), dc, c.size() * 4, cudaMemcpyDeviceToHost);
  double worst = 0;
  for (int r = 0; r < 32; r++)
    for (int j = 0; j < 32; j++) {
      double s = 0;
      for (int k = 0; k < 16; k++) s += double(float(a[r * 16 + k])) * float(b[j * 16 + k]);
      worst = std::max(worst, std::fabs(2 * s - c[r * 32 + j]));
    }
  std::printf("wmma gemm largest error: %s\n", worst < 1e-4 ? "below 1e-4" : "too large");
}

// Writes one element past the end of its buffer (thread 64 of 96; 64 floats is 256 bytes, so
// the element is on the guard page).
__global__ void past_the_end(float* x, int n) {
  const int i = threadIdx.x;
  if (i <= n) x[i] = 1.0f;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "past-the-end") {
    float* x = nullptr;
    cudaMalloc(&x, 64 * sizeof(float));
    cudaMemset(x, 0, 64 * sizeof(float));
    std::printf("written up to the end\n");
    std::fflush(stdout);
    past_the_end<<<1, 96>>>(x, 64);
    std::printf("not reached\n");
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "wmma-misaligned") {
    run_wmma(1);  // a tile that starts one element (2 bytes) off
    std::printf("not reached\n");
    return 0;
  }
  run_wmma(0);
  float* fresh = nullptr;
  cudaMalloc(&fresh, 4 * sizeof(float));
  float first_fresh = 0;
  cudaMemcpy(&first_fresh, fresh, sizeof(float), cudaMemcpyDeviceToHost);
  std::printf("fresh memory is NaN: %d\n", int(std::isnan(first_fresh)));
  std::printf("freeing a pointer never allocated: %s\n",
              cudaGetErrorName(cudaFree(reinterpret_cast<void*>(&first_fresh))));
  int* ints = nullptr;
  cudaMalloc(&ints, 64 * 7 * sizeof(int));
  shuffles<<<1, 64>>>(ints);
  std::vector<int> s(64 * 7);
  cudaMemcpy(s.data(), ints, s.size() * sizeof(int), cudaMemcpyDeviceToHost);
  std::printf("shuffle lane 0: %d %d %d %d %d %d %u\n", s[0], s[1], s[2], s[3], s[4], s[5],
              unsigned(s[6]));
  std::printf("shuffle lane 17: %d %d %d %d %d %d\n", s[17 * 7], s[17 * 7 + 1], s[17 * 7 + 2],
              s[17 * 7 + 3], s[17 * 7 + 4], s[17 * 7 + 5]);
  std::printf("shuffle lane 31: %d %d %d %d\n", s[31 * 7], s[31 * 7 + 1], s[31 * 7 + 2],
              s[31 * 7 + 3]);
  std::printf("shuffle lane 33 (second warp): %d\n", s[33 * 7]);

  const int n = 4 * 6 * 128;
  float *x = nullptr, *y = nullptr;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  std::vector<float> host(n);
  for (int i = 0; i < n; i++) host[i] = float(i % 97);
  cudaMemcpy(x, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  block_sums<<<dim3(4, 6), dim3(32, 4)>>>(y, x);
  std::vector<float> sums(24);
  cudaMemcpy(sums.data(), y, sums.size() * sizeof(float), cudaMemcpyDeviceToHost);
  double expect_ok = 1;
  for (int b = 0; b < 24; b++) {
    double e = 0;
    for (int t = 0; t < 128; t++) e += host[b * 128 + t];
    expect_ok *= e == sums[b];
  }
  std::printf("block sums match: %d\n", int(expect_ok));

  reverse_row<<<1, 64, 100 * sizeof(float)>>>(y, x, 100);
  cudaMemcpy(sums.data(), y, 2 * sizeof(float), cudaMemcpyDeviceToHost);
  std::printf("reversed: %g %g\n", sums[0], sums[1]);

  early_exit<<<1, 128>>>(ints);
  cudaMemcpy(s.data(), ints, sizeof(int), cudaMemcpyDeviceToHost);
  std::printf("early exit count: %d last error: %d\n", s[0], int(cudaGetLastError()));

  divergent_barriers<<<1, 32>>>(ints);
  std::printf("divergent barriers error: %s\n", cudaGetErrorName(cudaGetLastError()));

  // a spin on another block's write: a deadlock in an ordinary launch (the emulator runs its
  // blocks one at a time), done in a cooperative one
  cudaMemset(ints, 0, 4 * sizeof(int));
  handshake<<<2, 32>>>(ints, ints + 2);
  std::printf("handshake, ordinary launch: %s\n", cudaGetErrorName(cudaGetLastError()));
  cudaMemset(ints, 0, 4 * sizeof(int));
  cudaLaunchAttribute cooperative[1];
  cooperative[0].id = cudaLaunchAttributeCooperative;
  cooperative[0].val.cooperative = 1;
  cudaLaunchConfig_t together = {};
  together.gridDim = dim3(2);
  together.blockDim = dim3(32);
  together.attrs = cooperative;
  together.numAttrs = 1;
  const cudaError_t launched = cudaLaunchKernelEx(&together, handshake, ints, ints + 2);
  cudaMemcpy(s.data(), ints + 2, 2 * sizeof(int), cudaMemcpyDeviceToHost);
  std::printf("handshake, cooperative launch: %s %d %d\n", cudaGetErrorName(launched), s[0], s[1]);

  // the same cooperative launch: a wait with a time limit gives up (the emulator's timer runs)
  cudaMemset(ints, 0, 4 * sizeof(int));
  const cudaError_t timed = cudaLaunchKernelEx(&together, timed_wait,
                                               reinterpret_cast<unsigned*>(ints), ints + 2);
  cudaMemcpy(s.data(), ints + 2, 2 * sizeof(int), cudaMemcpyDeviceToHost);
  std::printf("timed wait, cooperative launch: %s passed %d waited %d\n",
              cudaGetErrorName(timed), s[0], s[1]);

  racy<<<1, 2>>>(ints);
  cudaMemcpy(s.data(), ints, sizeof(int), cudaMemcpyDeviceToHost);
  std::printf("racy read: %d\n", s[0]);

  add_one<<<1, 2048>>>(x, n);
  std::printf("2048 threads: %s\n", cudaGetErrorName(cudaGetLastError()));
  reverse_row<<<1, 64, 64 * 1024>>>(y, x, 100);
  std::printf("64 KiB shared: %s\n", cudaGetErrorName(cudaGetLastError()));
  cudaFuncSetAttribute(reverse_row, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024);
  reverse_row<<<1, 64, 64 * 1024>>>(y, x, 100);
  std::printf("64 KiB shared after the attribute: %s\n", cudaGetErrorName(cudaGetLastError()));

  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  add_one<<<(n + 255) / 256, 256, 0, stream>>>(x, n);
  float first = -1;
  cudaMemcpyAsync(&first, x, sizeof(float), cudaMemcpyDeviceToHost, stream);
  std::printf("while recording: x[0] %g copied %g\n", double(host[0]), double(first));
  cudaGraph_t graph;
  cudaStreamEndCapture(stream, &graph);
  cudaGraphExec_t exec;
  cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphLaunch(exec, stream);
  cudaGraphLaunch(exec, stream);
  cudaStreamSynchronize(stream);
  std::printf("after two replays: copied %g\n", double(first));

  cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  const cudaError_t sync = cudaStreamSynchronize(stream);
  cudaGraph_t broken = nullptr;
  const cudaError_t end = cudaStreamEndCapture(stream, &broken);
  std::printf("synchronize while recording: %s, then %s\n", cudaGetErrorName(sync),
              cudaGetErrorName(end));
  return 0;
}
