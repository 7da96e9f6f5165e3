// RUN: loom-opt %s --hspmd-switch-plans -split-input-file -verify-diagnostics -o /dev/null

// Strategy sets that cover different strategies.
func.func @names(
    %w: tensor<8x8xf32> {nn.param, hspmd.layout = #hspmd.strategies<[
        "tp" = <{[0, 1]: [S1:2]}>, "dp" = <{[0, 1]: [D:2]}>], optimizer = "dp">},
    // expected-error @+1 {{the strategy set of 'v' names "tp", "cp" but that of 'w' names "tp", "dp"; every parameter takes the same strategies}}
    %v: tensor<8xf32> {nn.param, hspmd.layout = #hspmd.strategies<[
        "tp" = <{[0, 1]: [S0:2]}>, "cp" = <{[0, 1]: [D:2]}>], optimizer = "cp">}) {
  return
}

// -----

// The same strategies, another optimizer strategy.
func.func @optimizer(
    %w: tensor<8x8xf32> {nn.param, hspmd.layout = #hspmd.strategies<[
        "tp" = <{[0, 1]: [S1:2]}>, "dp" = <{[0, 1]: [D:2]}>], optimizer = "dp">},
    // expected-error @+1 {{the strategy set of 'v' keeps its optimizer state under "tp" but that of 'w' under "dp"; a parameter set has one optimizer strategy}}
    %v: tensor<8xf32> {nn.param, hspmd.layout = #hspmd.strategies<[
        "tp" = <{[0, 1]: [S0:2]}>, "dp" = <{[0, 1]: [D:2]}>], optimizer = "tp">}) {
  return
}

// -----

// A member that does not fit the parameter's shape: the dialect's
// verifier refuses it before any pass runs (here, explicit blocks that do
// not sum to the dimension).
func.func @shape(
    // expected-error @+1 {{layout of argument 0: strategy 'tp': dimension 0: the block sizes of S0:[4, 2] sum to 6 but the dimension they cut has size 8}}
    %v: tensor<8xf32> {nn.param, hspmd.layout = #hspmd.strategies<[
        "tp" = <{[0, 1]: [S0:[4, 2]]}>, "dp" = <{[0, 1]: [D:2]}>], optimizer = "dp">}) {
  return
}

// -----

// A dynamic shape has no static shards to plan.
func.func @dynamic(
    // expected-error @+1 {{argument 'v' with a strategy set must be a tensor of static shape, not 'tensor<?xf32>'}}
    %v: tensor<?xf32> {nn.param, hspmd.layout = #hspmd.strategies<[
        "tp" = <{[0, 1]: [S0:2]}>, "dp" = <{[0, 1]: [D:2]}>], optimizer = "dp">}) {
  return
}

// -----

// A strategy no function has.
// RUN: not loom-opt %s --hspmd-switch-plans=from=ep -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=FROM
// FROM: error: no function has a strategy "ep" to switch from
func.func @from(
    %v: tensor<8xf32> {nn.param, hspmd.layout = #hspmd.strategies<[
        "tp" = <{[0, 1]: [S0:2]}>, "dp" = <{[0, 1]: [D:2]}>], optimizer = "dp">}) {
  return
}
