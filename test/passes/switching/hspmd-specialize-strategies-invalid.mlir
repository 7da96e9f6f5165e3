// RUN: loom-opt %s --hspmd-specialize-strategies -split-input-file -verify-diagnostics -o /dev/null

// A strategy name that cannot end a function's name.
// expected-error @+1 {{strategy "tp-2" cannot name a function (@bad_name_tp-2): strategy names are letters, digits and '_'}}
func.func @bad_name(
    %w: tensor<8x8xf32> {nn.param, hspmd.layout = #hspmd.strategies<[
        "tp-2" = <{[0, 1]: [S1:2]}>, "dp" = <{[0, 1]: [D:2]}>], optimizer = "dp">}) {
  return
}

// -----

// A strategy's function would take a name the module already has.
func.func @taken_dp() {
  return
}
// expected-error @+1 {{the function of strategy "dp" would be @taken_dp, which the module already has}}
func.func @taken(
    %w: tensor<8x8xf32> {nn.param, hspmd.layout = #hspmd.strategies<[
        "tp" = <{[0, 1]: [S1:2]}>, "dp" = <{[0, 1]: [D:2]}>], optimizer = "dp">}) {
  return
}

// -----

// An annotation in the body whose set names other strategies.
func.func @annotation(
    %w: tensor<8x8xf32> {nn.param, hspmd.layout = #hspmd.strategies<[
        "tp" = <{[0, 1]: [S1:2]}>, "dp" = <{[0, 1]: [D:2]}>], optimizer = "dp">}) -> tensor<8x8xf32> {
  // expected-error @+1 {{the strategy set of this annotation names "tp", "cp" but the function's arguments name "tp", "dp"; a program switches between one list of strategies}}
  %a = hspmd.annotate %w : tensor<8x8xf32> as #hspmd.strategies<[
      "tp" = <{[0, 1]: [S1:2]}>, "cp" = <{[0, 1]: [D:2]}>], optimizer = "cp">
  return %a : tensor<8x8xf32>
}

// -----

// Sets that disagree: the diagnostics of hspmd-switch-plans, at the
// argument (both passes read the sets through one helper).
func.func @names(
    %w: tensor<8x8xf32> {nn.param, hspmd.layout = #hspmd.strategies<[
        "tp" = <{[0, 1]: [S1:2]}>, "dp" = <{[0, 1]: [D:2]}>], optimizer = "dp">},
    // expected-error @+1 {{the strategy set of 'v' names "tp", "cp" but that of 'w' names "tp", "dp"; every parameter takes the same strategies}}
    %v: tensor<8xf32> {nn.param, hspmd.layout = #hspmd.strategies<[
        "tp" = <{[0, 1]: [S0:2]}>, "cp" = <{[0, 1]: [D:2]}>], optimizer = "cp">}) {
  return
}

// -----

// The attribute the pass sets is checked where it is written by hand.
// expected-error @+1 {{'hspmd.strategy' must be a non-empty string on a function, got 3 : i64}}
func.func @attr() attributes {hspmd.strategy = 3} {
  return
}

// -----

// A function with strategy sets that another calls: it is replaced by its
// strategies' functions, so the call would name nothing.
// expected-error @+1 {{@called has strategy sets and is used by name; it becomes one function per strategy, so nothing may call or name it}}
func.func @called(
    %w: tensor<8x8xf32> {nn.param, hspmd.layout = #hspmd.strategies<[
        "tp" = <{[0, 1]: [S1:2]}>, "dp" = <{[0, 1]: [D:2]}>], optimizer = "dp">}) {
  return
}
func.func @caller(%w: tensor<8x8xf32>) {
  // expected-note @+1 {{used here}}
  func.call @called(%w) : (tensor<8x8xf32>) -> ()
  return
}

// -----

// A result whose set names other strategies.
// expected-error @+1 {{the strategy set of result #0 names "tp", "cp" but the arguments name "tp", "dp"; a program switches between one list of strategies}}
func.func @result(
    %w: tensor<8x8xf32> {nn.param, hspmd.layout = #hspmd.strategies<[
        "tp" = <{[0, 1]: [S1:2]}>, "dp" = <{[0, 1]: [D:2]}>], optimizer = "dp">})
    -> (tensor<8x8xf32> {hspmd.layout = #hspmd.strategies<[
        "tp" = <{[0, 1]: [S1:2]}>, "cp" = <{[0, 1]: [D:2]}>], optimizer = "cp">}) {
  return %w : tensor<8x8xf32>
}

