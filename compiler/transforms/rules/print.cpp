// transforms/rules/print.cpp — print has no results: its JVP prints the primal
// values (JAX's jvp of debug.print) and adds no tangent; a print of a linear
// value is dropped by the transpose (transpose.cpp).
#include "transforms/rules/rules.h"

namespace spmd::derivatives {

const DerivativeRules kPrint{
    .family = "print",
    .jvp = [](JvpContext &) -> Tangent { return std::nullopt; },
    .transpose = nullptr,
};

}  // namespace spmd::derivatives
