//===- SingleProcessTest.cpp - The device bundle's MPI of one process ------===//
//
// What a single-rank build (the device bundle, scripts/device-bundle.sh)
// links instead of MPI and OpenBLAS: runtime/single (the MPI of one
// process) and the host kernels' portable GEMM (runtime/kernels/Blas.cpp
// built with LOOM_PORTABLE_GEMM). The MPI calls the runtime makes, with
// MPI's semantics for a world of one: sends to oneself matched in posting
// order per communicator and tag, truncation and impossible waits as
// error codes; the GEMM against a plain reference in long double for every
// transpose, alpha, beta and the empty cases.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/Blas.h"
#include "runtime/single/mpi.h"

#include "gtest/gtest.h"

#include <cmath>
#include <random>
#include <vector>

namespace {

TEST(SingleProcessMpi, WorldOfOne) {
  int flag = 0;
  ASSERT_EQ(MPI_Init(nullptr, nullptr), MPI_SUCCESS);
  ASSERT_EQ(MPI_Initialized(&flag), MPI_SUCCESS);
  EXPECT_EQ(flag, 1);
  int rank = -1, size = -1;
  EXPECT_EQ(MPI_Comm_rank(MPI_COMM_WORLD, &rank), MPI_SUCCESS);
  EXPECT_EQ(MPI_Comm_size(MPI_COMM_WORLD, &size), MPI_SUCCESS);
  EXPECT_EQ(rank, 0);
  EXPECT_EQ(size, 1);
  MPI_Comm copy = MPI_COMM_NULL;
  ASSERT_EQ(MPI_Comm_dup(MPI_COMM_WORLD, &copy), MPI_SUCCESS);
  int same = -1;
  EXPECT_EQ(MPI_Comm_compare(MPI_COMM_WORLD, copy, &same), MPI_SUCCESS);
  EXPECT_EQ(same, MPI_CONGRUENT);
  EXPECT_EQ(MPI_Comm_compare(copy, copy, &same), MPI_SUCCESS);
  EXPECT_EQ(same, MPI_IDENT);
  EXPECT_EQ(MPI_Comm_free(&copy), MPI_SUCCESS);
  EXPECT_EQ(copy, MPI_COMM_NULL);
  EXPECT_EQ(MPI_Comm_rank(copy, &rank), MPI_ERR_COMM);
  // Groups hold rank 0 alone.
  MPI_Group world, group;
  ASSERT_EQ(MPI_Comm_group(MPI_COMM_WORLD, &world), MPI_SUCCESS);
  int zero = 0, one = 1;
  EXPECT_EQ(MPI_Group_incl(world, 1, &one, &group), MPI_ERR_GROUP);
  ASSERT_EQ(MPI_Group_incl(world, 1, &zero, &group), MPI_SUCCESS);
  MPI_Comm sub = MPI_COMM_NULL;
  ASSERT_EQ(MPI_Comm_create_group(MPI_COMM_WORLD, group, 0, &sub),
            MPI_SUCCESS);
  EXPECT_EQ(MPI_Comm_size(sub, &size), MPI_SUCCESS);
  EXPECT_EQ(size, 1);
  EXPECT_EQ(MPI_Comm_free(&sub), MPI_SUCCESS);
  MPI_Comm none = MPI_COMM_WORLD;
  EXPECT_EQ(MPI_Comm_split(MPI_COMM_WORLD, MPI_UNDEFINED, 0, &none),
            MPI_SUCCESS);
  EXPECT_EQ(none, MPI_COMM_NULL);
  EXPECT_EQ(MPI_Bcast(&rank, 1, MPI_INT, 1, MPI_COMM_WORLD), MPI_ERR_ROOT);
}

TEST(SingleProcessMpi, CollectivesCopy) {
  long long in[3] = {4, -2, 9}, out[3] = {};
  ASSERT_EQ(MPI_Allreduce(in, out, 3, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD),
            MPI_SUCCESS);
  EXPECT_EQ(out[0], 4);
  EXPECT_EQ(out[2], 9);
  ASSERT_EQ(MPI_Allreduce(MPI_IN_PLACE, in, 3, MPI_LONG_LONG, MPI_MIN,
                          MPI_COMM_WORLD),
            MPI_SUCCESS);
  EXPECT_EQ(in[1], -2);
  char bytes[4] = {'a', 'b', 'c', 'd'}, gathered[8] = {};
  int counts[1] = {4}, displacements[1] = {3};
  ASSERT_EQ(MPI_Allgatherv(bytes, 4, MPI_BYTE, gathered, counts,
                           displacements, MPI_BYTE, MPI_COMM_WORLD),
            MPI_SUCCESS);
  EXPECT_EQ(gathered[3], 'a');
  EXPECT_EQ(gathered[6], 'd');
  EXPECT_EQ(gathered[0], 0);
  int value = 5, all = 0;
  EXPECT_EQ(MPI_Allgather(&value, 1, MPI_INT, &all, 2, MPI_INT,
                          MPI_COMM_WORLD),
            MPI_ERR_TRUNCATE);
  ASSERT_EQ(MPI_Allgather(&value, 1, MPI_INT, &all, 1, MPI_INT,
                          MPI_COMM_WORLD),
            MPI_SUCCESS);
  EXPECT_EQ(all, 5);
}

TEST(SingleProcessMpi, SendsToOneselfMatchInOrder) {
  MPI_Comm other;
  ASSERT_EQ(MPI_Comm_dup(MPI_COMM_WORLD, &other), MPI_SUCCESS);
  int a[2] = {1, 2}, b[2] = {3, 4}, c[2] = {5, 6};
  int got0[2] = {}, got1[2] = {}, got2[2] = {};
  MPI_Request requests[6];
  // Receives first on the world, a send on the duplicate (a message space
  // of its own) and two on the world, the second on another tag.
  ASSERT_EQ(MPI_Irecv(got0, 2, MPI_INT, 0, 0, MPI_COMM_WORLD, &requests[0]),
            MPI_SUCCESS);
  ASSERT_EQ(MPI_Irecv(got1, 2, MPI_INT, 0, 7, MPI_COMM_WORLD, &requests[1]),
            MPI_SUCCESS);
  ASSERT_EQ(MPI_Isend(c, 2, MPI_INT, 0, 0, other, &requests[2]), MPI_SUCCESS);
  ASSERT_EQ(MPI_Isend(a, 2, MPI_INT, 0, 0, MPI_COMM_WORLD, &requests[3]),
            MPI_SUCCESS);
  ASSERT_EQ(MPI_Isend(b, 2, MPI_INT, 0, 7, MPI_COMM_WORLD, &requests[4]),
            MPI_SUCCESS);
  ASSERT_EQ(MPI_Irecv(got2, 2, MPI_INT, 0, 0, other, &requests[5]),
            MPI_SUCCESS);
  int completed = 0, indices[6];
  MPI_Status statuses[6];
  ASSERT_EQ(MPI_Testsome(6, requests, &completed, indices, statuses),
            MPI_SUCCESS);
  EXPECT_EQ(completed, 6);
  EXPECT_EQ(got0[1], 2);
  EXPECT_EQ(got1[0], 3);
  EXPECT_EQ(got2[0], 5);
  int count = -1;
  EXPECT_EQ(MPI_Get_count(&statuses[0], MPI_INT, &count), MPI_SUCCESS);
  EXPECT_EQ(count, 2);
  ASSERT_EQ(MPI_Testsome(6, requests, &completed, indices, statuses),
            MPI_SUCCESS);
  EXPECT_EQ(completed, MPI_UNDEFINED);
  EXPECT_EQ(MPI_Comm_free(&other), MPI_SUCCESS);
}

TEST(SingleProcessMpi, ErrorsNotHangs) {
  int data[4] = {}, small[2] = {};
  MPI_Request receive, send;
  // A receive nobody can send to: waiting is an error, not a hang.
  ASSERT_EQ(MPI_Irecv(data, 4, MPI_INT, 0, 3, MPI_COMM_WORLD, &receive),
            MPI_SUCCESS);
  EXPECT_EQ(MPI_Wait(&receive, MPI_STATUS_IGNORE), MPI_ERR_PENDING);
  ASSERT_EQ(MPI_Cancel(&receive), MPI_SUCCESS);
  EXPECT_EQ(MPI_Wait(&receive, MPI_STATUS_IGNORE), MPI_SUCCESS);
  EXPECT_EQ(receive, MPI_REQUEST_NULL);
  // A peer other than rank 0.
  EXPECT_EQ(MPI_Isend(data, 4, MPI_INT, 1, 0, MPI_COMM_WORLD, &send),
            MPI_ERR_RANK);
  // A message longer than the receive: truncated, reported.
  ASSERT_EQ(MPI_Irecv(small, 2, MPI_INT, 0, 4, MPI_COMM_WORLD, &receive),
            MPI_SUCCESS);
  ASSERT_EQ(MPI_Isend(data, 4, MPI_INT, 0, 4, MPI_COMM_WORLD, &send),
            MPI_SUCCESS);
  EXPECT_EQ(MPI_Wait(&receive, MPI_STATUS_IGNORE), MPI_ERR_TRUNCATE);
  EXPECT_EQ(MPI_Wait(&send, MPI_STATUS_IGNORE), MPI_SUCCESS);
  int count = 0;
  EXPECT_EQ(MPI_Get_count(MPI_STATUS_IGNORE, MPI_BYTE, &count),
            MPI_ERR_OTHER);
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(MPI_ERR_PENDING, text, &length);
  EXPECT_GT(length, 0);
}

template <typename T>
void checkGemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
               T alpha, T beta, double bound) {
  std::mt19937 random(static_cast<unsigned>(m * 131 + n * 17 + k));
  std::uniform_real_distribution<double> uniform(-1, 1);
  // Leading dimensions wider than the matrices.
  int64_t lda = (transA ? m : k) + 3, ldb = (transB ? k : n) + 2,
          ldc = n + 1;
  std::vector<T> a((transA ? k : m) * lda), b((transB ? n : k) * ldb),
      c(m * ldc);
  for (T &x : a)
    x = static_cast<T>(uniform(random));
  for (T &x : b)
    x = static_cast<T>(uniform(random));
  for (T &x : c)
    x = static_cast<T>(uniform(random));
  std::vector<T> before = c;
  loom::host::detail::gemm(transA, transB, m, n, k, alpha, a.data(), lda,
                           b.data(), ldb, beta, c.data(), ldc);
  double error = 0, norm = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      long double sum = 0;
      for (int64_t p = 0; p < k; ++p)
        sum += static_cast<long double>(transA ? a[p * lda + i]
                                               : a[i * lda + p]) *
               (transB ? b[j * ldb + p] : b[p * ldb + j]);
      long double want =
          alpha * sum + (beta == T(0) ? 0.0L : beta * before[i * ldc + j]);
      ASSERT_TRUE(std::isfinite(static_cast<double>(c[i * ldc + j])));
      error += std::pow(static_cast<double>(c[i * ldc + j] - want), 2);
      norm += std::pow(static_cast<double>(want), 2);
    }
  EXPECT_LE(std::sqrt(error), bound * std::max(std::sqrt(norm), 1e-300))
      << "transA " << transA << " transB " << transB << " " << m << "x" << n
      << "x" << k;
  // Padding past n is untouched.
  for (int64_t i = 0; i < m; ++i)
    EXPECT_EQ(c[i * ldc + n], before[i * ldc + n]);
}

TEST(PortableGemm, AgreesWithAPlainReference) {
  for (bool transA : {false, true})
    for (bool transB : {false, true}) {
      checkGemm<double>(transA, transB, 37, 29, 41, 1.0, 0.0, 1e-14);
      checkGemm<double>(transA, transB, 5, 70, 3, -0.5, 2.0, 1e-14);
      // Over several row blocks (runtime/kernels/GemmBlocks.h). f32: each
      // dot product of k = 64 terms rounds within about k * 2^-24 (4e-6)
      // of the sum of its terms' magnitudes, which cancellation may make
      // larger than the result: 2e-5 norm-wise (f64 above: 1e-14).
      checkGemm<float>(transA, transB, 300, 24, 64, 1.0f, 0.0f, 2e-5);
      checkGemm<float>(transA, transB, 1, 1, 1, 2.0f, 1.0f, 2e-5);
    }
  // Nothing to contract: C = beta * C.
  checkGemm<double>(false, false, 4, 6, 0, 1.0, 0.5, 0);
  checkGemm<double>(false, true, 4, 6, 0, 1.0, 0.0, 0);
}

} // namespace
