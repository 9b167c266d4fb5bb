// ops/families/contractions.cpp — einsum (and `@`): EinsumAttrs' normalised
// spec, e.g. "ij,jk->ik". One sharding factor per index label; a split
// contracted index leaves a partial sum. The spec parser lives here too.
#include <map>
#include <set>

#include "ops/families/families.h"

namespace spmd {

bool parse_einsum(std::string_view spec, EinsumSpec &out, std::string &error) {
  out = {};
  auto arrow = spec.find("->");
  if (arrow == std::string_view::npos) {
    error = "einsum spec `" + std::string(spec) + "` needs an explicit output (`->`)";
    return false;
  }
  std::string lhs(spec.substr(0, arrow)), rhs(spec.substr(arrow + 2));
  std::string cur;
  for (char c : lhs) {
    if (c == ' ') continue;
    if (c == ',') {
      out.inputs.push_back(cur);
      cur.clear();
    } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      cur += c;
    } else {
      error = std::string("einsum spec has an invalid character `") + c + "`";
      return false;
    }
  }
  out.inputs.push_back(cur);
  for (char c : rhs) {
    if (c == ' ') continue;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) {
      error = std::string("einsum spec has an invalid character `") + c + "`";
      return false;
    }
    out.output += c;
  }
  for (const auto &s : out.inputs) {
    std::set<char> seen(s.begin(), s.end());
    if (seen.size() != s.size()) {
      error = "einsum operand indices `" + s + "` repeat an index (diagonals are not supported)";
      return false;
    }
  }
  std::set<char> seen(out.output.begin(), out.output.end());
  if (seen.size() != out.output.size()) {
    error = "einsum output `" + out.output + "` repeats an index";
    return false;
  }
  if (out.inputs.size() > 2) {
    error = "einsum takes one or two operands";
    return false;
  }
  return true;
}

std::string einsum_to_string(const EinsumSpec &spec) {
  std::string s;
  for (size_t i = 0; i < spec.inputs.size(); ++i) s += (i ? "," : "") + spec.inputs[i];
  return s + "->" + spec.output;
}

namespace families {
namespace {

ShapeRuleResult einsum_shape(OpCode, std::span<const Type> ops, const Attrs &attrs,
                             const rt::Mesh &) {
  EinsumSpec spec;
  std::string error;
  if (!parse_einsum(attrs.einsum().spec, spec, error)) return fail(error);
  if (spec.inputs.size() != ops.size())
    return fail("einsum spec `" + attrs.einsum().spec + "` names " +
                std::to_string(spec.inputs.size()) + " operands but " + std::to_string(ops.size()) +
                " were given");
  std::map<char, int64_t> sizes;
  for (size_t k = 0; k < ops.size(); ++k) {
    const std::string &idx = spec.inputs[k];
    if (static_cast<int64_t>(idx.size()) != ops[k].rank())
      return fail(std::string("the ") + (k == 0 ? "first" : "second") +
                  " einsum operand has rank " + std::to_string(ops[k].rank()) +
                  " but its indices `" + idx + "` have " + std::to_string(idx.size()));
    if (ops[k].dtype != ops[0].dtype) return fail("einsum operands must have the same dtype");
    for (size_t d = 0; d < idx.size(); ++d) {
      auto [it, inserted] = sizes.emplace(idx[d], ops[k].shape[d]);
      if (!inserted && it->second != ops[k].shape[d])
        return fail(std::string("einsum index `") + idx[d] + "` has size " +
                    std::to_string(it->second) + " and " + std::to_string(ops[k].shape[d]));
    }
  }
  Shape out;
  for (char c : spec.output) {
    auto it = sizes.find(c);
    if (it == sizes.end())
      return fail(std::string("einsum output index `") + c + "` appears in no operand");
    out.push_back(it->second);
  }
  if (ops[0].dtype == DType::Bool) return fail("einsum does not take bool operands");
  return one(ops[0].dtype, std::move(out));
}

/// matmul, einsum("ij,jk->ik"), is the hidet table as a special case: split i
/// (rows of A and C), k (columns of B and C) or j (contracted: C is a partial sum).
ShardingRule einsum_sharding(OpCode, std::span<const Type> operands, std::span<const Type>,
                             const Attrs &attrs) {
  EinsumSpec spec;
  std::string error;
  if (!parse_einsum(attrs.einsum().spec, spec, error))
    return unsupported("einsum spec `" + attrs.einsum().spec + "`: " + error);
  ShardingRule r;
  r.family = RuleFamily::Contraction;
  std::string labels;  // factor k is labels[k]
  auto factor_of = [&](char c, int64_t size) {
    auto pos = labels.find(c);
    if (pos != std::string::npos) return static_cast<int>(pos);
    labels += c;
    r.factor_sizes.push_back(size);
    r.factor_kinds.push_back(spec.output.find(c) != std::string::npos ? FactorKind::Parallel
                                                                      : FactorKind::Sum);
    return static_cast<int>(labels.size() - 1);
  };
  for (size_t k = 0; k < spec.inputs.size() && k < operands.size(); ++k) {
    std::vector<int> dims;
    for (size_t d = 0; d < spec.inputs[k].size(); ++d)
      dims.push_back(factor_of(spec.inputs[k][d], operands[k].shape.at(d)));
    r.operand_factors.push_back(std::move(dims));
  }
  std::vector<int> out;
  for (char c : spec.output) out.push_back(factor_of(c, 0));
  r.result_factors.push_back(std::move(out));
  return r;
}

}  // namespace

const OpRules kEinsum{
    .family = "contractions",
    .shape = einsum_shape,
    .computes_with_values = true,
    .requirement = AxisRequirement::None,
    .variance = same_variance,
    .constant_operand_adapts = true,
    .sharding = einsum_sharding,
};

}  // namespace families
}  // namespace spmd
