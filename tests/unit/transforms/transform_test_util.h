// transform_test_util.h — helpers for the transform tests: compile a program
// from text, derive a transformed program and re-compile its printed source,
// run shmaps on random inputs, inner products.
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/stats.h"
#include "interp/interpreter.h"
#include "ir/printer.h"
#include "pipeline/compile.h"
#include "pipeline/derive.h"
#include "spmdrt/tensor.h"

namespace spmd::test {

/// Compiles `text`; fails the test (printing diagnostics) on any error.
inline std::unique_ptr<Compilation> compile_ok(const std::string &text, bool auto_pb = true) {
  auto c = std::make_unique<Compilation>();
  CompileOptions o;
  o.auto_pbroadcast = auto_pb;
  compile_source(*c, "test.spmd", text, o);
  INFO(render_diagnostics(c->diags, c->sources));
  INFO(text);
  REQUIRE(c->ok());
  return c;
}

/// Derives a program and re-compiles its printed source with automatic
/// pbroadcast insertion OFF, as `spmdc check --no-auto-pbroadcast` would;
/// `remat` is `spmdc grad --remat`.
inline std::unique_ptr<Compilation> derive_ok(const Compilation &c, DeriveKind kind,
                                              const std::string &fn,
                                              std::vector<std::string> wrt = {},
                                              std::vector<std::string> of = {},
                                              bool remat = false) {
  DeriveRequest r;
  r.remat = remat;
  r.kind = kind;
  r.function = fn;
  r.wrt = std::move(wrt);
  r.of = std::move(of);
  ir::Module derived = derive(*c.module, r);
  std::string text = ir::print_module(derived);
  INFO(text);
  return compile_ok(text, /*auto_pb=*/false);
}

inline int only_shmap(const Compilation &c) { return find_shmap(*c.module, ""); }

inline const ir::Function &shmap_of(const Compilation &c) {
  return c.module->functions[static_cast<size_t>(only_shmap(c))];
}

/// Random global inputs for every parameter of the only shmap.
inline std::vector<rt::Tensor> random_inputs(const Compilation &c, uint64_t seed) {
  const ir::Function &f = shmap_of(c);
  std::vector<rt::Tensor> in;
  for (size_t k = 0; k < f.params.size(); ++k)
    in.push_back(rt::random_tensor(f.type(f.params[k].value).dtype, f.params[k].global_shape,
                                   seed * 7919 + k));
  return in;
}

inline std::vector<rt::Tensor> run(const Compilation &c, const std::vector<rt::Tensor> &inputs) {
  interp::InterpOptions o;
  o.check_replication = true;
  return interp::run_shmap(*c.module, only_shmap(c), inputs, o);
}

/// Runs shmap `fn` of `c` on global inputs (checking replication).
inline std::vector<rt::Tensor> run_named(const Compilation &c, const std::string &fn,
                                         const std::vector<rt::Tensor> &inputs) {
  interp::InterpOptions o;
  o.check_replication = true;
  return interp::run_shmap(*c.module, find_shmap(*c.module, fn), inputs, o);
}

/// The text of samples/<name> of the source tree (fails the test when it is
/// missing or empty).
inline std::string sample(const std::string &name) {
  std::ifstream in(std::string(SPMDC_SOURCE_DIR) + "/samples/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  REQUIRE(!ss.str().empty());
  return ss.str();
}

/// Whether a and b have the same dtype, shape and bytes.
inline bool same_bits(const rt::Tensor &a, const rt::Tensor &b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw(), b.raw(),
                     static_cast<size_t>(a.numel()) * rt::dtype_size(a.dtype())) == 0;
}

inline void require_same_bits(const rt::Tensor &a, const rt::Tensor &b) {
  REQUIRE(a.shape() == b.shape());
  for (int64_t e = 0; e < a.numel(); ++e) CHECK(a.get(e) == b.get(e));
}

inline double dot(const rt::Tensor &a, const rt::Tensor &b) {
  REQUIRE(a.shape() == b.shape());
  double s = 0;
  for (int64_t i = 0; i < a.numel(); ++i) s += a.get(i) * b.get(i);
  return s;
}

inline rt::Tensor axpy(double alpha, const rt::Tensor &x, const rt::Tensor &y) {
  rt::Tensor r = y.clone();
  for (int64_t i = 0; i < r.numel(); ++i) r.set(i, y.get(i) + alpha * x.get(i));
  return r;
}

inline int count_op(const Compilation &c, const std::string &op) {
  auto s = collective_stats(*c.module, shmap_of(c));
  auto it = s.by_op.find(op);
  return it == s.by_op.end() ? 0 : it->second.count;
}

/// Tensors carried by `op` collectives: psum((a, b), axes) counts two.
inline int count_values(const Compilation &c, const std::string &op) {
  auto s = collective_stats(*c.module, shmap_of(c));
  auto it = s.by_op.find(op);
  return it == s.by_op.end() ? 0 : it->second.values;
}

}  // namespace spmd::test
