//===- attention_skipping.cpp - Range-skipping attention against dense ----===//
//
// Benchmark (not in CI): the host attention kernel's forward pass on one
// packed sequence of 1800 tokens (4 heads of 64, f64, one thread), dense
// (AttentionSkipping::Never, the GEMMs over every key, masked) against the
// default (Auto) and the scalar range-skipping path forced (Always), side
// by side in one run, as ratios of time to the dense run. Masks: causal;
// a GRPO-shaped trie (a prompt of 1000 tokens, 8 responses of 100); a
// bushy agentic trie (a prompt of 8, 64 branches of 28). The visible pairs
// are printed against the dense ones (the analytic ratio of work).
//
//   test/bench/run.sh builds and runs it.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/HostKernels.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

namespace host = loom::host;

int main() {
  const int64_t B = 1, S = 1800, H = 4, D = 64;
  std::vector<double> q(B * S * H * D), o(q.size());
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> u(-1, 1);
  for (double &x : q)
    x = u(rng);
  host::Shape s{B, S, H, D};
  std::vector<int64_t> grpo(S), bushy(S);
  for (int64_t j = 0; j < 1000; ++j)
    grpo[j] = S - 1;
  for (int64_t r = 0; r < 8; ++r)
    for (int64_t t = 0; t < 100; ++t)
      grpo[1000 + r * 100 + t] = 1000 + r * 100 + 99;
  for (int64_t j = 0; j < 8; ++j)
    bushy[j] = S - 1;
  const int64_t per = (S - 8) / 64;
  for (int64_t j = 8; j < S; ++j)
    bushy[j] = std::min<int64_t>(S - 1, 8 + ((j - 8) / per + 1) * per - 1);
  struct Case {
    const char *name, *mask;
    const int64_t *ends;
  } cases[] = {{"causal", "causal", nullptr},
               {"grpo-trie", "tree", grpo.data()},
               {"bushy-trie", "tree", bushy.data()}};
  std::printf("%-11s %12s %14s %14s\n", "mask", "pairs/dense", "auto/dense",
              "always/dense");
  for (const Case &c : cases) {
    double seconds[3] = {0, 0, 0};
    int64_t pairs = 0;
    const host::AttentionSkipping modes[3] = {host::AttentionSkipping::Never,
                                              host::AttentionSkipping::Auto,
                                              host::AttentionSkipping::Always};
    for (int m = 0; m < 3; ++m) {
      host::setAttentionRangeSkipping(modes[m]);
      int64_t before = host::getAttentionKeysVisited();
      auto start = std::chrono::steady_clock::now();
      const int repeats = 3;
      for (int r = 0; r < repeats; ++r)
        host::attention(o.data(), s, q.data(), s, q.data(), s, q.data(), s,
                        c.ends ? host::IndexPtr(c.ends) : host::IndexPtr(nullptr),
                        c.ends ? host::Shape{B, S} : host::Shape{}, nullptr, {},
                        c.mask, host::kAbsent);
      seconds[m] = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count() /
                   repeats;
      if (m == 2)
        pairs = (host::getAttentionKeysVisited() - before) / repeats;
    }
    std::printf("%-11s %12.3f %14.3f %14.3f\n", c.name,
                static_cast<double>(pairs) / static_cast<double>(S * S),
                seconds[1] / seconds[0], seconds[2] / seconds[0]);
  }
  return 0;
}
