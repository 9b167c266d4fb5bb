// transforms/rules/random.cpp — key ... randint: random numbers have no
// derivative (as stop_gradient): d = 0, and no transpose.
#include "transforms/rules/rules.h"

namespace spmd::derivatives {

const DerivativeRules kRandom{
    .family = "random",
    .jvp = [](JvpContext &) -> Tangent { return std::nullopt; },
    .transpose = nullptr,
};

}  // namespace spmd::derivatives
