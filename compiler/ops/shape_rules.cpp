// ops/shape_rules.cpp — result dtype and local shape of every op: the entry
// point. Each family's shape rule sits beside its variance and sharding rules
// in ops/families/<family>.cpp; op_rules() (ops/op_rules.h) finds it.
#include "ops/shape_rules.h"

#include <algorithm>

#include "ops/families/families.h"
#include "spmdrt/checked.h"

namespace spmd {
namespace {

/// A key where a number is needed: a random key is no number (spmdrt/random.h).
ShapeRuleResult key_as_number(OpCode op) {
  return {{},
          "a random key is not a number: `" + std::string(op_display_name(op)) +
              "` cannot take it; draw numbers from it with uniform(key, shape), "
              "normal(key, shape) or random_bits(key, shape)",
          "key-as-number"};
}

}  // namespace

ShapeRuleResult infer_shapes(OpCode op, std::span<const Type> ops, const Attrs &attrs,
                             const rt::Mesh &mesh) {
  const OpRules &rules = op_rules(op);
  if (rules.computes_with_values)
    for (const Type &t : ops)
      if (t.dtype == DType::Key) return key_as_number(op);
  ShapeRuleResult r = rules.shape(op, ops, attrs, mesh);
  for (const Type &t : r.results)
    if (!rt::shape_fits(t.shape, static_cast<int64_t>(rt::dtype_size(t.dtype))))
      return families::too_large(shape_type_str(t.dtype, t.shape));
  return r;
}

int64_t axes_size(const rt::Mesh &mesh, const std::vector<int> &axes) {
  int64_t n = 1;
  for (int a : axes) n *= mesh.axis_size(a);
  return n;
}

bool same_but_leading_ones(const Shape &a, const Shape &b) {
  auto strip = [](const Shape &s) {
    auto it = std::find_if(s.begin(), s.end(), [](int64_t n) { return n != 1; });
    return Shape(it, s.end());
  };
  return strip(a) == strip(b);
}

}  // namespace spmd
