// RUN: loom-opt %s --hspmd-specialize-strategies=max-strategies=1 -verify-diagnostics -o /dev/null
// RUN: loom-opt %s --hspmd-specialize-strategies | FileCheck %s

// A set of two strategies against a bound of one; the default (16) takes it.
// CHECK: func.func @many_tp(
// CHECK: func.func @many_dp(
// expected-error @+1 {{@many has 2 strategies; at most 1 (max-strategies): each is a step compiled on its own}}
func.func @many(
    %w: tensor<8x8xf32> {nn.param, hspmd.layout = #hspmd.strategies<[
        "tp" = <{[0, 1]: [S1:2]}>, "dp" = <{[0, 1]: [D:2]}>], optimizer = "dp">}) {
  return
}
