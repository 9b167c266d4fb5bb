// ops/shape_rules.h — the dtype and local shape of every op's results.
//
// infer_shapes is the single entry to every op's shape rule (each in its
// family's file, ops/families/<family>.cpp, found through op_rules(),
// ops/op_rules.h); lowering uses it to type
// new instructions (turning a failure into a diagnostic at the op) and the
// verifier uses it to re-check them. Variance is not computed here (see
// variance_rules.h). Call's result types come from its callee and are not
// handled here.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "ops/types.h"
#include "ops/op_info.h"
#include "support/small_vector.h"

namespace spmd {

struct ShapeRuleResult {
  SmallVector<Type, 1> results;     // variance left empty (inline: most ops have one result)
  std::string error;                // non-empty on failure: a complete sentence
  std::string code = "type-error";  // the diagnostic code of a failure
  bool ok() const { return error.empty(); }
};

/// The result types of `op`. Every result shape is checked with
/// spmdrt/checked.h: a shape over 2^60 bytes fails with code `shape-too-large`.
ShapeRuleResult infer_shapes(OpCode op, std::span<const Type> operands, const Attrs &attrs,
                             const rt::Mesh &mesh);

/// Parsed einsum spec: one index string per operand and the output.
struct EinsumSpec {
  std::vector<std::string> inputs;
  std::string output;
};
/// Parses "ij,jk->ik" (explicit output required); error text on failure.
bool parse_einsum(std::string_view spec, EinsumSpec &out, std::string &error);
std::string einsum_to_string(const EinsumSpec &spec);

/// Product of the sizes of `axes` in `mesh`.
int64_t axes_size(const rt::Mesh &mesh, const std::vector<int> &axes);

/// True when shapes `a` and `b` differ only in leading 1s ([1, 7] and [7]):
/// a reshape between them only adds or drops size-1 dimensions in front.
bool same_but_leading_ones(const Shape &a, const Shape &b);

}  // namespace spmd
