// analysis/roofline.h — `spmdc cost --plot`: a program's roofline as SVG.
//
// The roofline of analysis/cost.h's model, drawn log-log: x is arithmetic
// intensity (flops per byte communicated, per device), y attainable flop/s
// per device. The roof is min(peak, x * bandwidth) with the profile's peak
// compute and collective bandwidth; it bends at the ridge x = peak /
// bandwidth (what `spmdc cost` prints as the hardware intensity). Each
// program the cost command analysed (the forward shmap, and its gradient
// with --grad) is one labelled point at (its intensity, flops / its estimated
// time); the time includes the collectives' latency alpha, so a point sits
// on or below the roof. A program that communicates nothing has no finite
// intensity and is drawn at the right edge; one that computes nothing is
// listed, not drawn.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "analysis/cost.h"

namespace spmd {

/// The SVG document for `programs` (title, report) under `profile`.
std::string roofline_svg(const std::vector<std::pair<std::string, CostReport>> &programs,
                         const HardwareProfile &profile);

}  // namespace spmd
