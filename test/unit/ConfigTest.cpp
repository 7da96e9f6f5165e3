//===- ConfigTest.cpp - The run configuration -----------------------------===//

#include "frontends/config/Config.h"

#include "dialects/hspmd/IR/HSPMDDialect.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace loom::config;

TEST(ConfigTest, GlobsMatchArgumentNames) {
  EXPECT_TRUE(matchGlob("l*_wq", "l0_wq"));
  EXPECT_TRUE(matchGlob("l*_wq", "l12_wq"));
  EXPECT_FALSE(matchGlob("l*_wq", "l0_wk"));
  EXPECT_TRUE(matchGlob("*", ""));
  EXPECT_TRUE(matchGlob("w?", "w1"));
  EXPECT_FALSE(matchGlob("w?", "w12"));
  EXPECT_TRUE(matchGlob("*_b*", "l0_b1"));
  EXPECT_TRUE(matchGlob("a*b*c", "aXbYbZc"));
  EXPECT_FALSE(matchGlob("a*b*c", "aXbYbZ"));
  EXPECT_TRUE(matchGlob("tokens", "tokens"));
  EXPECT_FALSE(matchGlob("tokens", "tokens2"));
}

TEST(ConfigTest, ParseErrorsHaveLineAndColumn) {
  std::string error;
  auto config =
      parseConfig("cluster {\n  devices { id: 0 }\n  devices { id: x }\n}\n",
                  "c.txtpb", error);
  EXPECT_TRUE(mlir::failed(config));
  EXPECT_EQ(error.rfind("c.txtpb:3:", 0), 0u) << error;
}

TEST(ConfigTest, AWholeConfigIsChecked) {
  mlir::MLIRContext context;
  context.loadDialect<loom::hspmd::HSPMDDialect>();
  std::string error;
  auto config = parseConfig(R"(
    cluster { devices { id: 0 speed: 1 memory_gib: 8 }
              devices { id: 1 speed: 1 memory_gib: 8 } }
    groups { name: "g" devices: [0, 1] }
    layouts { match: "x" layout: "#hspmd.union<{[0, 1]: [S0:2]}>" }
    run { target: "host" ranks: 2 steps: 3 })",
                            "ok.txtpb", error);
  ASSERT_TRUE(mlir::succeeded(config)) << error;
  std::vector<std::string> problems;
  EXPECT_TRUE(mlir::succeeded(checkConfig(*config, &context, problems)));
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(summarize(*config), "2 devices on 1 node(s), 1 group(s), 1 "
                                "layout(s); run: host, 2 ranks, 3 steps, data "
                                "synthetic, seed 0");

  // Two ranks for layouts on three devices, and a group on no devices.
  config->mutable_run()->set_ranks(2);
  config->mutable_layouts(0)->set_layout("#hspmd.union<{[0, 1, 2]: [S0:3]}>");
  config->mutable_groups(0)->clear_devices();
  problems.clear();
  EXPECT_TRUE(mlir::failed(checkConfig(*config, &context, problems)));
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0], "group 'g' has no devices");
  EXPECT_EQ(problems[1], "layout for 'x': device 2 is not in the cluster");
  EXPECT_EQ(problems[2],
            "run: 2 ranks, but the layouts use 3 devices (one rank each)");
}
