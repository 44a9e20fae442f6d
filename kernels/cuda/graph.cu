// CUDA graphs: the calls made on a context between arl_graph_begin and
// arl_graph_end are captured from its stream and replayed with one launch (a
// decode step is hundreds of small kernels; replaying them as a graph removes
// the per-call host and launch cost).
#include "common.cuh"

struct arl_graph {
  cudaGraphExec_t exec;
  int device;
};

extern "C" {

arl_status arl_graph_begin(arl_ctx* ctx) {
  ARL_CTX(ctx);
  if (ctx->capturing)
    return arl::fail(ctx, ARL_ERR_VALUE, "%s: a graph is already being recorded", __func__);
  // Thread-local: unsafe calls of this thread fail, other threads are not disturbed.
  cudaError_t err = cudaStreamBeginCapture(ctx->stream, cudaStreamCaptureModeThreadLocal);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return arl::cuda_fail(ctx, __func__, err);
  }
  ctx->capturing = true;
  return ARL_OK;
}

arl_status arl_graph_end(arl_ctx* ctx, arl_graph** out) {
  ARL_CTX(ctx);
  if (out != nullptr) *out = nullptr;
  if (!ctx->capturing)
    return arl::fail(ctx, ARL_ERR_VALUE, "%s: no graph is being recorded", __func__);
  cudaGraph_t graph = nullptr;
  cudaError_t err = cudaStreamEndCapture(ctx->stream, &graph);
  ctx->capturing = false;
  if (err != cudaSuccess) {
    cudaGetLastError();
    if (graph != nullptr) cudaGraphDestroy(graph);
    return arl::fail(ctx, ARL_ERR_VALUE,
                     "%s: the recording failed (%s: a call made while recording waited for the "
                     "GPU or was not allowed in a graph); nothing was recorded",
                     __func__, cudaGetErrorString(err));
  }
  if (out == nullptr) {
    cudaGraphDestroy(graph);
    return ARL_OK;
  }
  cudaGraphExec_t exec = nullptr;
  err = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return arl::cuda_fail(ctx, __func__, err);
  }
  auto* g = new (std::nothrow) arl_graph{exec, ctx->device};
  if (g == nullptr) {
    cudaGraphExecDestroy(exec);
    return arl::fail(ctx, ARL_ERR_ALLOC, "%s: out of host memory", __func__);
  }
  *out = g;
  return ARL_OK;
}

arl_status arl_graph_launch(arl_ctx* ctx, const arl_graph* graph) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, graph);
  if (ctx->capturing)
    return arl::fail(ctx, ARL_ERR_VALUE, "%s: cannot launch a graph while recording one",
                     __func__);
  if (graph->device != ctx->device)
    return arl::fail(ctx, ARL_ERR_VALUE, "%s: the graph was recorded on device %d, not %d",
                     __func__, graph->device, ctx->device);
  cudaError_t err = cudaGraphLaunch(graph->exec, ctx->stream);
  return err == cudaSuccess ? ARL_OK : arl::cuda_fail(ctx, __func__, err);
}

void arl_graph_destroy(arl_graph* graph) {
  if (graph == nullptr) return;
  cudaSetDevice(graph->device);
  cudaGraphExecDestroy(graph->exec);
  delete graph;
}

}  // extern "C"
