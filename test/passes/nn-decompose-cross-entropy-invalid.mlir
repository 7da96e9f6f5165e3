// RUN: loom-opt %s --nn-decompose-cross-entropy -verify-diagnostics -o /dev/null

// The decomposition builds an iota and reshapes of the logits' shape.
func.func @dynamic(%logits: tensor<?x10xf64>, %labels: tensor<?xi64>) -> tensor<f64> {
  // expected-error @+1 {{has dynamic shapes; the decomposition needs static ones}}
  %l = nn.cross_entropy %logits, %labels {normalizer = 4.0 : f64} : tensor<?x10xf64>, tensor<?xi64>
  return %l : tensor<f64>
}
