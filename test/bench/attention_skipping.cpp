//===- attention_skipping.cpp - Range-skipping attention against dense ----===//
//
// Benchmark (not in CI): the host attention kernel's forward and backward
// passes on one packed sequence of 1800 tokens (4 heads of 64, f64, one
// thread), dense (AttentionSkipping::Never: forward GEMMs over every key,
// masked; backward scalar loops testing every key) against the default
// (Auto, blocked GEMMs over the keys each block of queries sees) and the
// exact scalar walk (Always), side by side in one run, as ratios of time
// to the dense run. Masks: causal;
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
  std::vector<double> dq(q.size()), dk(q.size()), dv(q.size());
  std::printf("%-11s %12s %12s %12s %12s %12s\n", "mask", "pairs/dense",
              "fwd auto", "fwd always", "bwd auto", "bwd always");
  for (const Case &c : cases) {
    double seconds[2][3] = {{0, 0, 0}, {0, 0, 0}};
    int64_t pairs = 0;
    const host::AttentionSkipping modes[3] = {host::AttentionSkipping::Never,
                                              host::AttentionSkipping::Auto,
                                              host::AttentionSkipping::Always};
    host::IndexPtr ends = c.ends ? host::IndexPtr(c.ends) : host::IndexPtr(nullptr);
    host::Shape endsShape = c.ends ? host::Shape{B, S} : host::Shape{};
    for (int m = 0; m < 3; ++m) {
      host::setAttentionRangeSkipping(modes[m]);
      int64_t before = host::getAttentionKeysVisited();
      const int repeats = 3;
      auto start = std::chrono::steady_clock::now();
      for (int r = 0; r < repeats; ++r)
        host::attention(o.data(), s, q.data(), s, q.data(), s, q.data(), s,
                        ends, endsShape, nullptr, {}, c.mask, host::kAbsent);
      auto middle = std::chrono::steady_clock::now();
      for (int r = 0; r < repeats; ++r)
        host::attention_grad(dq.data(), s, dk.data(), s, dv.data(), s,
                             o.data(), s, q.data(), s, q.data(), s, q.data(),
                             s, ends, endsShape, nullptr, {}, c.mask,
                             host::kAbsent);
      auto end = std::chrono::steady_clock::now();
      seconds[0][m] =
          std::chrono::duration<double>(middle - start).count() / repeats;
      seconds[1][m] =
          std::chrono::duration<double>(end - middle).count() / repeats;
      if (m == 2)
        pairs = (host::getAttentionKeysVisited() - before) / (2 * repeats);
    }
    std::printf("%-11s %12.3f %12.3f %12.3f %12.3f %12.3f\n", c.name,
                static_cast<double>(pairs) / static_cast<double>(S * S),
                seconds[0][1] / seconds[0][0], seconds[0][2] / seconds[0][0],
                seconds[1][1] / seconds[1][0], seconds[1][2] / seconds[1][0]);
  }
  return 0;
}
