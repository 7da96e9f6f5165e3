//===- SimulatorTest.cpp - The N-rank simulator ---------------------------===//
//
// What lit cannot reach through loom-run (every rank runs the same function
// there): ranks running different functions, which deadlock, disagree on a
// collective or fail; each must end the run with a diagnostic, never hang.
// The collectives' results and bytes are checked against a numpy model by
// test/runtime/simulator/check_collectives.py.
//
//===----------------------------------------------------------------------===//

#include "runtime/simulator/Simulator.h"

#include "dialects/hspmd/IR/HSPMDDialect.h"
#include "dialects/nn/IR/NNDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

#include <string>
#include <vector>

using namespace mlir;
using loom::interp::ElementKind;
using loom::interp::Tensor;

namespace {

const char *kProgram = R"mlir(
func.func @sum(%x: tensor<4xf64>) -> tensor<4xf64> {
  %y = hspmd.all_reduce sum %x over [0] of [2] : tensor<4xf64> -> tensor<4xf64>
  return %y : tensor<4xf64>
}
func.func @max(%x: tensor<4xf64>) -> tensor<4xf64> {
  %y = hspmd.all_reduce max %x over [0] of [2] : tensor<4xf64> -> tensor<4xf64>
  return %y : tensor<4xf64>
}
func.func @none(%x: tensor<4xf64>) -> tensor<4xf64> {
  return %x : tensor<4xf64>
}
func.func @bad_mesh(%x: tensor<4xf64>) -> tensor<4xf64> {
  %y = hspmd.all_reduce sum %x over [0] of [3] : tensor<4xf64> -> tensor<4xf64>
  return %y : tensor<4xf64>
}
func.func @twice(%x: tensor<4xf64>) -> tensor<4xf64> {
  %y = hspmd.all_reduce sum %x over [0] of [2] : tensor<4xf64> -> tensor<4xf64>
  %z = hspmd.all_gather %y dim 0 over [0] of [2] : tensor<4xf64> -> tensor<8xf64>
  %w = hspmd.local_slice %z dim 0 over [0] of [2] : tensor<8xf64> -> tensor<4xf64>
  return %w : tensor<4xf64>
}
)mlir";

class SimulatorTest : public ::testing::Test {
protected:
  SimulatorTest()
      : handler(&context,
                [this](Diagnostic &diag) { messages.push_back(diag.str()); }) {
    context.loadDialect<loom::hspmd::HSPMDDialect, loom::nn::NNDialect,
                        func::FuncDialect>();
    module = parseSourceString<ModuleOp>(kProgram, &context);
  }

  std::vector<std::vector<Tensor>> inputs() {
    std::vector<std::vector<Tensor>> args;
    for (double base : {1.0, 10.0})
      args.push_back({Tensor::fromValues<double>(
          {4}, {base, base + 1, base + 2, base + 3})});
    return args;
  }

  bool saw(const std::string &needle) {
    for (const std::string &message : messages)
      if (message.find(needle) != std::string::npos)
        return true;
    return false;
  }

  MLIRContext context;
  std::vector<std::string> messages;
  ScopedDiagnosticHandler handler;
  OwningOpRef<ModuleOp> module;
};

TEST_F(SimulatorTest, ReducesAndCountsBytes) {
  ASSERT_TRUE(module);
  loom::sim::Simulator simulator(*module, 2);
  auto results = simulator.run("twice", inputs());
  ASSERT_TRUE(succeeded(results));
  for (int rank = 0; rank < 2; ++rank) {
    const Tensor &out = (*results)[rank][0];
    EXPECT_EQ(out.getShape(), llvm::ArrayRef<int64_t>({4}));
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(out.getDouble(i), 11.0 + 2 * i);
    // all_reduce of 32 bytes over 2: 16 + 16; all_gather: 32; slice: 0.
    const auto &stats = simulator.getStats(rank);
    EXPECT_EQ(stats.byKind.at("all_reduce").bytesSent, 32);
    EXPECT_EQ(stats.byKind.at("all_gather").bytesSent, 32);
    EXPECT_EQ(stats.byKind.at("local_slice").bytesSent, 0);
    EXPECT_EQ(stats.getBytesSent(), 64);
    EXPECT_EQ(stats.getBytesReceived(), 64);
  }
  EXPECT_TRUE(messages.empty());
}

TEST_F(SimulatorTest, DeadlockIsReportedNotHung) {
  ASSERT_TRUE(module);
  loom::sim::Simulator simulator(*module, 2);
  auto results =
      simulator.run(std::vector<std::string>{"sum", "none"}, inputs());
  EXPECT_TRUE(failed(results));
  EXPECT_TRUE(saw("deadlock: collective #0 of the sub-group {0, 1} was "
                  "reached by rank(s) 0 but never by rank(s) 1"));
}

TEST_F(SimulatorTest, DisagreementNamesBothRanks) {
  ASSERT_TRUE(module);
  loom::sim::Simulator simulator(*module, 2);
  auto results =
      simulator.run(std::vector<std::string>{"sum", "max"}, inputs());
  EXPECT_TRUE(failed(results));
  EXPECT_TRUE(saw("ranks 0 and 1 of a sub-group disagree on a collective"));
}

TEST_F(SimulatorTest, AFailingRankEndsTheRun) {
  ASSERT_TRUE(module);
  loom::sim::Simulator simulator(*module, 2);
  auto results =
      simulator.run(std::vector<std::string>{"sum", "bad_mesh"}, inputs());
  EXPECT_TRUE(failed(results));
  EXPECT_TRUE(saw("runs over a mesh of 3 devices but its group has 2 "
                  "ranks in the simulator"));
}

TEST_F(SimulatorTest, RunsAreBitwiseRepeatable) {
  ASSERT_TRUE(module);
  loom::sim::Simulator simulator(*module, 2);
  auto first = simulator.run("twice", inputs());
  auto second = simulator.run("twice", inputs());
  for (const std::string &message : messages)
    ADD_FAILURE() << message;
  ASSERT_TRUE(succeeded(first) && succeeded(second));
  for (int rank = 0; rank < 2; ++rank)
    EXPECT_TRUE((*first)[rank][0].bitwiseEqual((*second)[rank][0]));
  // Statistics add up over runs.
  EXPECT_EQ(simulator.getStats(0).byKind.at("all_reduce").calls, 2);
}

} // namespace
