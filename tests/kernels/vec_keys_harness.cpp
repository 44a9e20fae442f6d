// vdot_keys and vaxpy_keys against vdot and vaxpy once a key: the same bits for every head dim,
// key count and stride tried. Compiled with kernels/cpu/vec_math.cpp under the library's flags
// (vec_keys.test.ts); prints "compared N, differ M" and exits 1 if any differs.
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "vec_math.h"

int main() {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  int compared = 0, differ = 0;
  for (int d = 1; d <= 136; d += (d < 40 ? 1 : 8)) {
    for (int n : {0, 1, 2, 3, 4, 5, 7, 8, 13}) {
      for (int pad : {0, 3}) {
        const int64_t stride = d + pad;
        std::vector<float> q(d), k(size_t(n) * stride + 1), w(n + 1);
        for (float& x : q) x = u(rng);
        for (float& x : k) x = u(rng);
        for (float& x : w) x = u(rng);
        std::vector<float> one(n + 1, -1.0f), keys(n + 1, -1.0f);
        for (int j = 0; j < n; j++) one[j] = 0.37f * arl::vdot(q.data(), k.data() + j * stride, d);
        arl::vdot_keys(keys.data(), q.data(), k.data(), stride, n, d, 0.37f);
        differ += std::memcmp(one.data(), keys.data(), sizeof(float) * (n + 1)) != 0;
        std::vector<float> y1(d), y2;
        for (float& x : y1) x = u(rng);
        y2 = y1;
        for (int j = 0; j < n; j++) arl::vaxpy(y1.data(), w[j] * 0.61f, k.data() + j * stride, d);
        arl::vaxpy_keys(y2.data(), w.data(), 0.61f, k.data(), stride, n, d);
        differ += std::memcmp(y1.data(), y2.data(), sizeof(float) * d) != 0;
        compared += 2;
      }
    }
  }
  std::printf("compared %d, differ %d\n", compared, differ);
  return differ == 0 ? 0 : 1;
}
