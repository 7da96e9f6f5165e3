//===- RunTimePlan.h - nn.moe_plan's kernel, free of Abseil -----*- C++ -*-===//
//
// The entry point every target's nn.moe_plan kernel calls (the host, and
// the CUDA and Ascend kernels from host copies), declared apart from
// Placement.h so that sources compiled by nvcc need no Abseil headers.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_MOE_RUNTIMEPLAN_H
#define LOOM_RUNTIME_MOE_RUNTIMEPLAN_H

#include <cstdint>
#include <string>

namespace loom::moe {

/// nn.moe_plan (docs/generated/nn.md): plans layer `layer` of a forecast
/// (`rows x layers x experts`, row-major; the rows summed) with
/// planPlacement (without exactSmallLayers: a run-time plan) for `devices`
/// devices of `slots` slots on `nodes` nodes,
/// the experts' home placement (device d holds experts [d * E / devices,
/// (d + 1) * E / devices)) as the previous one and `expertBytes` an
/// expert. Writes the plan's slots to `hosts` (devices x slots; -1: empty)
/// and to `lookup` the same with each empty slot given its device's first
/// home expert. With `previous` (devices x slots, the previous plan's
/// lookup; null: none) the previous placement is what those slots hold,
/// and an empty slot keeps what it holds. Returns what is wrong (empty:
/// nothing), naming the layer.
std::string planFromForecast(const int64_t *forecast, int64_t rows,
                             int64_t layers, int64_t experts, int64_t layer,
                             int64_t devices, int64_t slots, int64_t nodes,
                             int64_t expertBytes, const int64_t *previous,
                             int64_t *hosts, int64_t *lookup);

} // namespace loom::moe

#endif // LOOM_RUNTIME_MOE_RUNTIMEPLAN_H
