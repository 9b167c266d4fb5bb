// ops/families/common.cpp — the helpers the op family files build their rules from.
#include <algorithm>
#include <numeric>

#include "ops/families/families.h"

namespace spmd::families {

std::string shp(const Shape &s) { return rt::shape_str(s); }

bool broadcast(const Shape &a, const Shape &b, Shape &out) {
  size_t n = std::max(a.size(), b.size());
  out.assign(n, 1);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    out[i] = da == 1 ? db : da;
  }
  return true;
}

ShapeRuleResult fail(std::string message) { return {{}, std::move(message)}; }

ShapeRuleResult too_large(std::string what) {
  return {{}, what + " is too large: an array may hold at most 2^60 bytes", "shape-too-large"};
}

ShapeRuleResult one(DType d, Shape s) { return {{Type{d, std::move(s), {}}}, {}}; }

ShardingRule unsupported(std::string why) {
  ShardingRule r;
  r.family = RuleFamily::Unsupported;
  r.unsupported = std::move(why);
  return r;
}

ShardingRule elementwise(const Type &result, std::span<const Type> operands) {
  ShardingRule r;
  r.family = RuleFamily::Elementwise;
  const int64_t rank = result.rank();
  for (int64_t d = 0; d < rank; ++d) {
    r.factor_sizes.push_back(result.shape[d]);
    r.factor_kinds.push_back(FactorKind::Parallel);
  }
  for (const Type &t : operands) {
    std::vector<int> dims;
    const int64_t offset = rank - t.rank();
    for (int64_t d = 0; d < t.rank(); ++d) {
      int64_t rd = d + offset;
      bool same = rd >= 0 && t.shape[d] == result.shape[rd];
      dims.push_back(same ? static_cast<int>(rd) : kNoFactor);
    }
    r.operand_factors.push_back(std::move(dims));
  }
  std::vector<int> out(static_cast<size_t>(rank));
  std::iota(out.begin(), out.end(), 0);
  r.result_factors.push_back(std::move(out));
  return r;
}

}  // namespace spmd::families
