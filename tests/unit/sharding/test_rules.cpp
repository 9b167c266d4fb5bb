// test_rules.cpp — the sharding rule table (ops/sharding_rules.h) and the
// strategies it gives (sharding/strategy.h), checked against the seeds'
// tables: hidet's matmul table, ONNX's broadcast and reduction rules.
#include <catch2/catch.hpp>

#include "ops/sharding_rules.h"
#include "sharding/strategy.h"

namespace spmd {
namespace {

Type f32(Shape s) { return Type{DType::F32, std::move(s), {}}; }

sharding::OpSignature sig(OpCode op, std::vector<Type> operands, std::vector<Type> results,
                          Attrs attrs = {}) {
  sharding::OpSignature s;
  s.op = op;
  s.operands = std::move(operands);
  s.results = std::move(results);
  s.attrs = std::move(attrs);
  s.rule = sharding_rule(op, s.operands, s.results, s.attrs);
  return s;
}

std::string layouts(const sharding::Strategy &s, const rt::Mesh &mesh) {
  std::string out;
  for (size_t k = 0; k < s.operands.size(); ++k)
    out += (k ? "," : "") + sharding::to_string(s.operands[k], mesh);
  out += "->";
  for (const auto &r : s.results) out += sharding::to_string(r, mesh);
  return out;
}

std::vector<std::string> all_layouts(const sharding::OpSignature &s, const rt::Mesh &mesh,
                                     bool carry = false) {
  sharding::StrategyOptions o;
  o.carry_partials = carry;
  std::vector<std::string> out;
  for (const auto &st : sharding::enumerate_strategies(s, mesh, builtin_profiles().front(), o))
    out.push_back(layouts(st, mesh));
  return out;
}

}  // namespace

TEST_CASE("sharding rules: matmul gives hidet's table on a 1-D mesh", "[sharding][rules]") {
  rt::Mesh mesh({{"i", 4}});
  Attrs a;
  a.einsum().spec = "ij,jk->ik";
  auto s = sig(OpCode::Einsum, {f32({8, 16}), f32({16, 4})}, {f32({8, 4})}, a);
  REQUIRE(s.rule.family == RuleFamily::Contraction);
  CHECK(s.rule.factor_kinds ==
        std::vector<FactorKind>{FactorKind::Parallel, FactorKind::Sum, FactorKind::Parallel});
  // Unsplit; split i (rows: SR x RR -> SR); split j (RS x SR -> partial sum);
  // split k (RR x RS -> RS).
  CHECK(all_layouts(s, mesh) == std::vector<std::string>{"P(),P()->P()", "P(i),P()->P(i)",
                                                         "P(None, i),P(i)->P(partial=i)",
                                                         "P(),P(None, i)->P(None, i)"});
}

TEST_CASE("sharding rules: einsum factors on a 2-D mesh, each axis used once",
          "[sharding][rules]") {
  rt::Mesh mesh({{"x", 2}, {"y", 2}});
  Attrs a;
  a.einsum().spec = "bij,bjk->bik";
  auto s = sig(OpCode::Einsum, {f32({4, 8, 8}), f32({4, 8, 8})}, {f32({4, 8, 8})}, a);
  auto all = all_layouts(s, mesh);
  // 4 factors, 2 axes of size 2: each axis to one of 4 factors or none
  // (5 * 5 = 25) plus the second order where both axes split one factor (4).
  CHECK(all.size() == 29);
  CHECK(std::count(all.begin(), all.end(), "P(x, None, y),P(x, y)->P(x, partial=y)") == 1);
  CHECK(std::count(all.begin(), all.end(), "P((y, x)),P((y, x))->P((y, x))") == 1);
}

TEST_CASE("sharding rules: broadcasting splits only non-broadcast dimensions (ONNX)",
          "[sharding][rules]") {
  rt::Mesh mesh({{"x", 2}, {"y", 2}});
  // [M, 1] + [1, N]: both dims may split, over different axes (composable).
  auto s = sig(OpCode::Add, {f32({4, 1}), f32({1, 6})}, {f32({4, 6})});
  CHECK(s.rule.operand_factors == std::vector<std::vector<int>>{{0, kNoFactor}, {kNoFactor, 1}});
  auto all = all_layouts(s, mesh);
  CHECK(std::count(all.begin(), all.end(), "P(x),P(None, y)->P(x, y)") == 1);
  // A bias vector broadcast over the rows follows the columns' split.
  auto b = sig(OpCode::Add, {f32({4, 6}), f32({6})}, {f32({4, 6})});
  CHECK(b.rule.operand_factors == std::vector<std::vector<int>>{{0, 1}, {1}});
}

TEST_CASE("sharding rules: reductions split reduced dims into partial results",
          "[sharding][rules]") {
  rt::Mesh mesh({{"i", 2}});
  Attrs a;
  a.reduce().dims = {1};
  auto sum = sig(OpCode::ReduceSum, {f32({4, 6})}, {f32({4})}, a);
  CHECK(all_layouts(sum, mesh) ==
        std::vector<std::string>{"P()->P()", "P(i)->P(i)", "P(None, i)->P(partial=i)"});
  // max over a split dimension is completed at once with pmax.
  auto max = sig(OpCode::ReduceMax, {f32({4, 6})}, {f32({4})}, a);
  auto strategies = sharding::enumerate_strategies(max, mesh, builtin_profiles().front(), {});
  REQUIRE(strategies.size() == 3);
  CHECK(strategies[2].results[0].complete());
  REQUIRE(strategies[2].finish.size() == 1);
  CHECK(strategies[2].finish[0].op == OpCode::Pmax);
}

TEST_CASE("sharding rules: reshape splits the major dimension of each group", "[sharding][rules]") {
  Attrs a;
  // [4, 6] -> [24]: dim 0 of both sides shares a factor of size gcd(4, 24) = 4.
  auto merge = sig(OpCode::Reshape, {f32({4, 6})}, {f32({24})}, a);
  CHECK(merge.rule.operand_factors == std::vector<std::vector<int>>{{0, kNoFactor}});
  CHECK(merge.rule.result_factors == std::vector<std::vector<int>>{{0}});
  CHECK(merge.rule.factor_sizes == std::vector<int64_t>{4});
  // [2, 3, 4] -> [6, 4]: a [2,3]->[6] group (factor gcd(2,6)=2) and a kept 4.
  auto regroup = sig(OpCode::Reshape, {f32({2, 3, 4})}, {f32({6, 4})}, a);
  CHECK(regroup.rule.operand_factors == std::vector<std::vector<int>>{{0, kNoFactor, 1}});
  CHECK(regroup.rule.result_factors == std::vector<std::vector<int>>{{0, 1}});
  CHECK(regroup.rule.factor_sizes == std::vector<int64_t>{2, 4});
  // Unit dimensions do not take the major place: [1, 8] -> [8].
  auto squeeze = sig(OpCode::Reshape, {f32({1, 8})}, {f32({8})}, a);
  CHECK(squeeze.rule.operand_factors == std::vector<std::vector<int>>{{kNoFactor, 0}});
}

TEST_CASE("sharding rules: layout ops keep untouched dimensions", "[sharding][rules]") {
  Attrs t;
  t.layout().dims = {1, 0};
  auto tr = sig(OpCode::Transpose, {f32({4, 6})}, {f32({6, 4})}, t);
  CHECK(tr.rule.result_factors == std::vector<std::vector<int>>{{1, 0}});
  Attrs c;
  c.layout().dim = 1;
  auto cat = sig(OpCode::Concat, {f32({4, 2}), f32({4, 3})}, {f32({4, 5})}, c);
  CHECK(cat.rule.operand_factors == std::vector<std::vector<int>>{{0, kNoFactor}, {0, kNoFactor}});
  CHECK(cat.rule.linearity == Linearity::Together);
  Attrs sl;
  sl.layout().start = {0, 1};
  sl.layout().limit = {4, 5};
  sl.layout().stride = {1, 1};
  auto slice = sig(OpCode::Slice, {f32({4, 6})}, {f32({4, 4})}, sl);
  CHECK(slice.rule.operand_factors == std::vector<std::vector<int>>{{0, kNoFactor}});
}

TEST_CASE("sharding rules: partial sums pass through linear operands only", "[sharding][rules]") {
  rt::Mesh mesh({{"i", 2}});
  // -x with x partial: the result is partial too.
  auto neg = sig(OpCode::Neg, {f32({4})}, {f32({4})});
  auto n = all_layouts(neg, mesh, /*carry=*/true);
  CHECK(std::count(n.begin(), n.end(), "P(partial=i)->P(partial=i)") == 1);
  // tanh is not linear: no partial operand.
  auto tanh = sig(OpCode::Tanh, {f32({4})}, {f32({4})});
  for (const std::string &l : all_layouts(tanh, mesh, true))
    CHECK(l.find("partial") == std::string::npos);
  // a + b needs both partial over the same axes; a * c one of them.
  auto add = sig(OpCode::Add, {f32({4}), f32({4})}, {f32({4})});
  auto a = all_layouts(add, mesh, true);
  CHECK(std::count(a.begin(), a.end(), "P(partial=i),P(partial=i)->P(partial=i)") == 1);
  CHECK(std::count(a.begin(), a.end(), "P(partial=i),P()->P(partial=i)") == 0);
  auto mul = sig(OpCode::Mul, {f32({4}), f32({4})}, {f32({4})});
  auto m = all_layouts(mul, mesh, true);
  CHECK(std::count(m.begin(), m.end(), "P(partial=i),P()->P(partial=i)") == 1);
  CHECK(std::count(m.begin(), m.end(), "P(partial=i),P(partial=i)->P(partial=i)") == 0);
}

TEST_CASE("sharding rules: collectives have no rule, with a reason", "[sharding][rules]") {
  Attrs a;
  a.collective().axes = {0};
  auto psum = sig(OpCode::Psum, {f32({4})}, {f32({4})}, a);
  CHECK(psum.rule.family == RuleFamily::Unsupported);
  CHECK(psum.rule.unsupported.find("communicates") != std::string::npos);
}

}  // namespace spmd
