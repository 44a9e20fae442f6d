// Out-of-memory harness for tests/kernels/oom.test.ts: makes one kernel call
// with valid, full-size buffers after capping the address space (RLIMIT_AS) so
// that the kernel's own scratch allocation fails. agentrl.h promises
// ARL_ERR_ALLOC (4) and "never aborts the process". Prints "<case>: status N".
// Linux only (reads /proc/self/statm).
#include <sys/resource.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "agentrl.h"

// Caps the address space at its current size plus extra_mb.
static void cap(long extra_mb) {
  FILE* f = std::fopen("/proc/self/statm", "r");
  long pages = 0;
  if (f == nullptr || std::fscanf(f, "%ld", &pages) != 1) std::exit(2);
  std::fclose(f);
  rlimit r;
  r.rlim_cur = r.rlim_max = rlim_t(pages) * 4096 + rlim_t(extra_mb) * 1048576;
  if (setrlimit(RLIMIT_AS, &r) != 0) std::exit(3);
}

template <class T>
static T* zeros(size_t n) {
  T* p = static_cast<T*>(std::calloc(n, sizeof(T)));
  if (p == nullptr) std::exit(4);
  return p;
}

int main(int argc, char** argv) {
  arl_ctx* ctx = arl_ctx_create(2);
  const char* which = argc > 1 ? argv[1] : "";
  int st = -1;
  if (!std::strcmp(which, "logprob")) {
    // Scratch allocated outside any parallel region: T x 256 floats (64 MB).
    const int32_t t = 1 << 16, v = 4096, c = 1;
    float *h = zeros<float>(t), *w = zeros<float>(v), *logp = zeros<float>(t), *lse = zeros<float>(t);
    int32_t* tg = zeros<int32_t>(t);
    cap(32);
    st = arl_logprob_forward(ctx, logp, nullptr, lse, h, tg, w, t, v, c, 1.0f);
  } else if (!std::strcmp(which, "decode")) {
    // One query over a slot of L = 2^26 positions (D = 1): per-thread scores of 256 MB.
    const int32_t l = 1 << 26;
    float *kc = zeros<float>(l), *vc = zeros<float>(l);
    float q[1] = {1}, out[1];
    int32_t slot[1] = {0}, lens[1] = {l};
    cap(32);
    st = arl_attention_decode(ctx, out, q, kc, vc, slot, lens, 1, 1, 1, 1, l, 1, 1.0f);
  } else if (!std::strcmp(which, "sample")) {
    // Two rows of V = 2^24 logits: per-thread z (128 MB of doubles) and order (64 MB).
    const int32_t v = 1 << 24;
    float* logits = zeros<float>(size_t(v) * 2);
    float temp[2] = {1, 1}, topp[2] = {1, 1};
    int32_t topk[2] = {0, 0}, tok[2];
    uint64_t seeds[2] = {1, 2}, counters[2] = {0, 0};
    cap(32);
    st = arl_sample(ctx, tok, nullptr, logits, temp, topk, topp, seeds, counters, 2, v);
  } else if (!std::strcmp(which, "attention")) {
    // One sequence of T = 2^24 rows, HQ = HKV = D = 1: per-thread scores of 64 MB.
    const int32_t t = 1 << 24;
    float *q = zeros<float>(t), *k = zeros<float>(t), *v = zeros<float>(t);
    float *out = zeros<float>(t), *lse = zeros<float>(t);
    int32_t cu[2] = {0, t};
    cap(32);
    st = arl_attention_forward(ctx, out, lse, q, k, v, cu, 1, t, 1, 1, 1, 1.0f);
  } else if (!std::strcmp(which, "rope")) {
    // One head of D = 2^26: inv_freq (256 MB) fits, the per-row cos/sin (128 MB each) do not.
    const int32_t d = 1 << 26;
    float *x = zeros<float>(d), *out = zeros<float>(d);
    int32_t pos[1] = {3};
    cap(300);
    st = arl_rope(ctx, out, x, pos, 1, 1, d, 10000.0f, 0);
  } else {
    return 5;
  }
  std::printf("%s: status %d (%s)\n", which, st, arl_last_error(ctx));
  return 0;
}
