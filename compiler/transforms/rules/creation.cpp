// transforms/rules/creation.cpp — constant, full, iota: constants, d = 0.
#include "transforms/rules/rules.h"

namespace spmd::derivatives {

const DerivativeRules kCreation{
    .family = "creation",
    .jvp = [](JvpContext &) -> Tangent { return std::nullopt; },
    .transpose = nullptr,
};

}  // namespace spmd::derivatives
