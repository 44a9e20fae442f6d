// cuBLAS loaded at run time (dlopen of the libcublas the machine has, with our
// own declarations of the few functions used: the build machines have no
// cuBLAS headers). Absent cuBLAS, GEMMs fall back to the library's own kernel.
#pragma once

#include <cuda_runtime.h>

namespace arl {

// A cuBLAS handle on `stream`, or null when cuBLAS cannot be loaded; *workspace =
// the device workspace given to it (free it after the handle; may be null).
void* cublas_create(cudaStream_t stream, void** workspace);
void cublas_destroy(void* handle);

// Why cuBLAS is not in use ("" when it is).
const char* cublas_status();

}  // namespace arl
