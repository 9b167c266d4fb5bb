// transforms/rules/control.cpp — call and for have no rule here: calls are
// inlined before a derivative is taken, and jvp.cpp and transpose.cpp handle
// loops themselves (a loop of the derived body).
#include <stdexcept>

#include "transforms/rules/rules.h"

namespace spmd::derivatives {

const DerivativeRules kCallOrLoop{
    .family = "control",
    .jvp = [](JvpContext &) -> Tangent {
      throw std::logic_error("jvp: calls are inlined first; loops are handled by jvp.cpp");
    },
    .transpose = nullptr,
};

}  // namespace spmd::derivatives
