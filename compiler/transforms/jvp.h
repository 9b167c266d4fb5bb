// transforms/jvp.h — forward-mode differentiation (linearisation) of a function.
//
// jvp_function turns a flat function f(x1..xn) -> (y1..ym) into
//   f_jvp(x1..xn, dx_k for each k in wrt) -> (y1..ym, dy1..dym)
// computing both the primal outputs and their tangents. A tangent has the type
// of its primal value — dtype, local shape and variance — and its parameter or
// result uses the primal's partition spec. Tangent instructions are linear in
// the tangent inputs; the values they read from the primal computation are the
// residuals that transposition keeps. Rules are in transforms/rules/, one
// value per op beside its transpose rule (apply_jvp_rule, jvp_rules.h).
// pmax/pmin are not differentiable (TransformError "not-differentiable").
#pragma once

#include <vector>

#include "ir/ir.h"
#include "transforms/emitter.h"

namespace spmd {

struct JvpResult {
  ir::Function function;
  size_t num_primal_params = 0;   // params [0, n) are the primals
  size_t num_primal_results = 0;  // results [0, m) are the primal outputs
};

/// `function` must be flat (see inline_calls). `wrt[k]` says whether parameter
/// k gets a tangent input.
JvpResult jvp_function(const ir::Module &module, const ir::Function &function,
                       const std::vector<bool> &wrt);

/// Name of the tangent of a value named `name` ("w" -> "w_dot"); "" stays "".
std::string tangent_name(const std::string &name);

}  // namespace spmd
