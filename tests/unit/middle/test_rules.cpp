// test_rules.cpp — the op tables: shape rules and variance rules, case by case,
// with expected results worked out by hand from the language reference.
#include <catch2/catch.hpp>
#include <set>
#include <stdexcept>
#include <utility>

#include "ops/shape_rules.h"
#include "ops/variance_rules.h"

namespace spmd {
namespace {

const rt::Mesh kMesh({{"data", 2}, {"model", 4}});

Type t(DType d, Shape s, AxisSet v = {}) { return Type{d, std::move(s), v}; }

Shape shape_of(OpCode op, std::vector<Type> ops, Attrs a = {}) {
  auto r = infer_shapes(op, ops, a, kMesh);
  INFO(r.error);
  REQUIRE(r.ok());
  return r.results.at(0).shape;
}

std::string error_of(OpCode op, std::vector<Type> ops, Attrs a = {}) {
  auto r = infer_shapes(op, ops, a, kMesh);
  REQUIRE_FALSE(r.ok());
  return r.error;
}

TEST_CASE("shape rules: elementwise ops broadcast like NumPy", "[rules]") {
  CHECK(shape_of(OpCode::Add, {t(DType::F32, {4, 1, 3}), t(DType::F32, {5, 1})}) == Shape{4, 5, 3});
  CHECK(shape_of(OpCode::Mul, {t(DType::F32, {}), t(DType::F32, {2, 2})}) == Shape{2, 2});
  CHECK(
      infer_shapes(OpCode::Lt, std::vector<Type>{t(DType::I32, {3}), t(DType::I32, {3})}, {}, kMesh)
          .results[0]
          .dtype == DType::Bool);
  CHECK(error_of(OpCode::Add, {t(DType::F32, {3}), t(DType::F32, {4})}).find("do not broadcast") !=
        std::string::npos);
  CHECK(error_of(OpCode::Add, {t(DType::F32, {3}), t(DType::F64, {3})}).find("different dtypes") !=
        std::string::npos);
  CHECK(error_of(OpCode::Exp, {t(DType::I32, {3})}).find("floating-point") != std::string::npos);
  CHECK(shape_of(OpCode::Select, {t(DType::Bool, {4, 1}), t(DType::F32, {3}), t(DType::F32, {})}) ==
        Shape{4, 3});
}

TEST_CASE("shape rules: reductions, einsum, layout", "[rules]") {
  Attrs r;
  r.reduce().dims = {0, 2};
  CHECK(shape_of(OpCode::ReduceSum, {t(DType::F32, {2, 3, 4})}, r) == Shape{3});
  Attrs e;
  e.einsum().spec = "bij,bjk->bik";
  CHECK(shape_of(OpCode::Einsum, {t(DType::F32, {5, 2, 3}), t(DType::F32, {5, 3, 7})}, e) ==
        Shape{5, 2, 7});
  e.einsum().spec = "ij,jk->ik";
  CHECK(error_of(OpCode::Einsum, {t(DType::F32, {2, 3}), t(DType::F32, {4, 5})}, e)
            .find("index `j` has size 3 and 4") != std::string::npos);
  Attrs tr;
  tr.layout().dims = {2, 0, 1};
  CHECK(shape_of(OpCode::Transpose, {t(DType::F32, {2, 3, 4})}, tr) == Shape{4, 2, 3});
  Attrs sl;
  sl.layout().start = {1, 0};
  sl.layout().limit = {7, 3};
  sl.layout().stride = {2, 1};
  CHECK(shape_of(OpCode::Slice, {t(DType::F32, {8, 3})}, sl) == Shape{3, 3});  // rows 1, 3, 5
  Attrs pad;
  pad.layout().shape = {8, 3};
  pad.layout().start = {1, 0};
  pad.layout().stride = {2, 1};
  CHECK(shape_of(OpCode::Pad, {t(DType::F32, {3, 3})}, pad) == Shape{8, 3});
  Attrs cat;
  cat.layout().dim = 1;
  CHECK(shape_of(OpCode::Concat, {t(DType::F32, {2, 3}), t(DType::F32, {2, 5})}, cat) ==
        Shape{2, 8});
  Attrs rs;
  rs.layout().shape = {4, 6};
  CHECK(error_of(OpCode::Reshape, {t(DType::F32, {5, 5})}, rs).find("cannot reshape") !=
        std::string::npos);
}

TEST_CASE("shape rules: collectives change local shapes by the group size", "[rules]") {
  Attrs a;
  a.collective().axes = {1};  // model: 4 devices
  a.collective().dim = 1;
  CHECK(shape_of(OpCode::AllGather, {t(DType::F32, {2, 3})}, a) == Shape{2, 12});
  CHECK(shape_of(OpCode::PsumScatter, {t(DType::F32, {2, 8})}, a) == Shape{2, 2});
  CHECK(error_of(OpCode::PsumScatter, {t(DType::F32, {2, 6})}, a).find("not divisible") !=
        std::string::npos);
  a.collective().tiled = false;
  CHECK(shape_of(OpCode::AllGather, {t(DType::F32, {2, 3})}, a) == Shape{2, 4, 3});
  Attrs both;
  both.collective().axes = {0, 1};  // 8 devices
  CHECK(shape_of(OpCode::AllGatherInvariant, {t(DType::F32, {3})}, both) == Shape{24});
  Attrs a2a;
  a2a.collective().axes = {1};
  a2a.collective().dim = 0;
  a2a.collective().concat_dim = 1;
  CHECK(shape_of(OpCode::AllToAll, {t(DType::F32, {8, 3})}, a2a) == Shape{2, 12});
  Attrs idx;
  idx.collective().axes = {0};
  auto r = infer_shapes(OpCode::AxisIndex, {}, idx, kMesh);
  CHECK(r.results[0].dtype == DType::I32);
  CHECK(r.results[0].shape.empty());
}

TEST_CASE("variance rules: the design note's table", "[rules]") {
  const AxisSet data = AxisSet::of(0), model = AxisSet::of(1), both = data | model;
  Attrs on_data;
  on_data.collective().axes = {0};
  // Varying -> Invariant along the named axes.
  CHECK(operand_requirement(OpCode::Psum) == AxisRequirement::Varying);
  CHECK(result_variance(OpCode::Psum, both, on_data) == model);
  CHECK(result_variance(OpCode::AllGatherInvariant, both, on_data) == model);
  CHECK(result_variance(OpCode::Pmax, data, on_data).empty());
  // Invariant -> Varying.
  CHECK(operand_requirement(OpCode::Pbroadcast) == AxisRequirement::Invariant);
  CHECK(result_variance(OpCode::Pbroadcast, model, on_data) == both);
  CHECK(operand_requirement(OpCode::Pscatter) == AxisRequirement::Invariant);
  CHECK(result_variance(OpCode::Pscatter, AxisSet(), on_data) == data);
  // Varying -> Varying.
  for (OpCode op : {OpCode::AllGather, OpCode::PsumScatter, OpCode::AllToAll, OpCode::Ppermute}) {
    CHECK(operand_requirement(op) == AxisRequirement::Varying);
    CHECK(result_variance(op, both, on_data) == both);
  }
  // () -> Varying.
  CHECK(result_variance(OpCode::AxisIndex, AxisSet(), on_data) == data);
  // Non-collectives keep their operands' variance; constants are invariant.
  CHECK(result_variance(OpCode::Mul, model, {}) == model);
  CHECK(result_variance(OpCode::Einsum, both, {}) == both);
  CHECK(result_variance(OpCode::Full, both, {}).empty());
  CHECK(std::string(variance_signature(OpCode::Psum)) == "Varying -> Invariant");
  CHECK(std::string(variance_signature(OpCode::AllGather)) == "Varying -> Varying");
  CHECK(std::string(variance_signature(OpCode::Pbroadcast)) == "Invariant -> Varying");
}

TEST_CASE("the op table lists every op once, with its spelling", "[rules]") {
  std::set<std::string> spellings;
  for (int i = 0; i < kNumOps; ++i) {
    const OpInfo &info = op_info(static_cast<OpCode>(i));
    CHECK(static_cast<int>(info.code) == i);
    CHECK(spellings.insert(std::string(info.spelling)).second);
  }
  CHECK(op_communicates(OpCode::Psum));
  CHECK_FALSE(op_communicates(OpCode::Pbroadcast));
  CHECK_FALSE(op_communicates(OpCode::Pscatter));
}

TEST_CASE("the Linearity column: which operands each op is linear in", "[rules]") {
  CHECK(op_linearity(OpCode::Add) == OpLinearity::InAll);
  CHECK(op_linearity(OpCode::Mul) == OpLinearity::InEach);
  CHECK(op_linearity(OpCode::Div) == OpLinearity::InFirst);
  CHECK(op_linearity(OpCode::Neg) == OpLinearity::InFirst);
  CHECK(op_linearity(OpCode::Exp) == OpLinearity::NotLinear);
  CHECK(op_linearity(OpCode::Psum) == OpLinearity::PerOperand);
  CHECK(op_linearity(OpCode::Pmax) == OpLinearity::NotLinear);
  CHECK(linear_in_operand(OpLinearity::InBranches, 1));
  CHECK_FALSE(linear_in_operand(OpLinearity::InBranches, 0));        // where's condition
  CHECK_FALSE(linear_in_operand(OpLinearity::InArrayAndUpdate, 2));  // the index
  CHECK(linear_together(OpLinearity::InAll));
  CHECK_FALSE(linear_together(OpLinearity::InEach));
}

TEST_CASE("typed attributes: one family per op, defaults when nothing is set", "[rules]") {
  CHECK(op_attr_family(OpCode::For) == AttrFamily::Loop);
  CHECK(op_attr_family(OpCode::AllToAll) == AttrFamily::Collective);
  CHECK(op_attr_family(OpCode::Add) == AttrFamily::None);
  Attrs loop;
  loop.loop().stop = 4;
  CHECK(loop.family() == AttrFamily::Loop);
  CHECK(loop.loop().start == 0);
  CHECK(loop.loop().step == 1);
  CHECK_THROWS_AS(std::as_const(loop).collective(), std::logic_error);
  CHECK_THROWS_AS(loop.call(), std::logic_error);
  const Attrs none;
  CHECK(none.family() == AttrFamily::None);
  CHECK(none.collective().tiled);  // nothing set: the family's defaults
  Attrs defaults;
  defaults.collective();
  CHECK(defaults == none);  // started but all default: equal to nothing set
  CHECK_FALSE(loop == none);
}

}  // namespace
}  // namespace spmd
