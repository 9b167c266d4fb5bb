// tests/unit/interp/test_interp_layout.cpp — reductions, contractions and layout ops.
//
// Each op runs on the local blocks of a (2, 4) mesh (and, where it matters, a
// 1-device and a (4, 2) mesh); collectives combine the partial results so the
// global outputs can be compared with plain loops over the global arrays.
// pad, dynamic_slice and dynamic_update_slice have no surface syntax (the
// transforms emit them), so their programs are built with ir::Builder.
#include "interp_test_util.h"
#include "ir/builder.h"

using namespace spmd;
using namespace spmd::interp::testing;

TEST_CASE("reductions with psum/pmax/pmin over the sharded axes", "[interp][layout]") {
  const std::string src = R"(mesh M = (a: 2, b: 4)
shmap f(x: f32[8, 8] @ P(a, b)) -> (f32[8] @ P(a), f32[8] @ P(b), f32[] @ P(), f32[1, 1] @ P(), f32[8] @ P(b)) on M {
  rows = psum(sum(x, axes=1), b)
  cols = pmax(max(x, axes=0), a)
  lo = pmin(min(x), (a, b))
  m = psum(mean(x, axes=(0, 1), keepdims=true), (a, b)) / 8.0
  n = pmin(min(x, axes=-2), a)
  return rows, cols, lo, m, n
})";
  Tensor x = ramp(DType::F32, {8, 8}, 31, -15);
  auto X = [&](int64_t r, int64_t c) { return x.get(r * 8 + c); };
  auto out = run(src, "f", {x});
  check_close(out[0], {8}, [&](int64_t r) {
    double s = 0;
    for (int c = 0; c < 8; ++c) s += X(r, c);
    return s;
  });
  check_equal(out[1], DType::F32, {8}, [&](int64_t c) {
    double m = -1e9;
    for (int r = 0; r < 8; ++r) m = std::max(m, X(r, c));
    return m;
  });
  double lo = 1e9, total = 0;
  for (int64_t i = 0; i < 64; ++i) lo = std::min(lo, x.get(i)), total += x.get(i);
  check_equal(out[2], DType::F32, {}, [&](int64_t) { return lo; });
  check_close(out[3], {1, 1}, [&](int64_t) { return total / 64; });
  check_equal(out[4], DType::F32, {8}, [&](int64_t c) {
    double m = 1e9;
    for (int r = 0; r < 8; ++r) m = std::min(m, X(r, c));
    return m;
  });
}

TEST_CASE("reshape, transpose, broadcast_to, slicing and concat on local blocks",
          "[interp][layout]") {
  const std::string src = R"(mesh M = (a: 2, b: 4)
shmap f(x: f32[8, 8] @ P(a, b)) -> (f32[64] @ P((a, b)), f32[8, 8] @ P(b, a), f32[8, 12] @ P(a, b), f32[4, 4] @ P(a, b), f32[16] @ P((a, b)), f32[8, 16] @ P(a, b)) on M {
  flat = reshape(x, (8,))
  t = transpose(x)
  bc = broadcast_to(reshape(sum(x, axes=1), (4, 1)), (4, 3))
  s = x[0:4:2, 1:2]
  row = x[3]
  c = concat([x, 2.0 * x], axis=1)
  return flat, t, bc, s, row, c
})";
  Tensor x = ramp(DType::F32, {8, 8}, 31, -15);
  auto X = [&](int64_t r, int64_t c) { return x.get(r * 8 + c); };
  auto out = run(src, "f", {x});
  // Device (a, b) holds rows 4a..4a+3 and columns 2b, 2b+1.
  check_equal(out[0], DType::F32, {64}, [&](int64_t i) {
    int64_t d = i / 8, a = d / 4, b = d % 4, k = i % 8;
    return X(a * 4 + k / 2, b * 2 + k % 2);
  });
  check_equal(out[1], DType::F32, {8, 8}, [&](int64_t i) { return X(i % 8, i / 8); });
  check_equal(out[2], DType::F32, {8, 12}, [&](int64_t i) {
    int64_t r = i / 12, b = (i % 12) / 3;
    return X(r, b * 2) + X(r, b * 2 + 1);
  });
  check_equal(out[3], DType::F32, {4, 4}, [&](int64_t i) {
    int64_t r = i / 4, c = i % 4;
    return X((r / 2) * 4 + (r % 2) * 2, c * 2 + 1);
  });
  check_equal(out[4], DType::F32, {16}, [&](int64_t i) {
    int64_t d = i / 2, a = d / 4, b = d % 4;
    return X(a * 4 + 3, b * 2 + i % 2);
  });
  check_equal(out[5], DType::F32, {8, 16}, [&](int64_t i) {
    int64_t r = i / 16, c = i % 16, b = c / 4, lc = c % 4;
    return lc < 2 ? X(r, b * 2 + lc) : 2 * X(r, b * 2 + lc - 2);
  });
}

TEST_CASE("matmul and einsum with psum of partial products", "[interp][layout]") {
  for (const char *mesh :
       {"mesh M = (a: 1, b: 1)", "mesh M = (a: 2, b: 4)", "mesh M = (a: 4, b: 2)"}) {
    const std::string src = std::string(mesh) + R"(
shmap f(x: f32[8, 8] @ P(a, b), w: f32[8, 3] @ P(b), y: f32[8, 8] @ P(a)) -> (f32[8, 3] @ P(a), f32[8, 2] @ P(a), f32[] @ P(), f32[8, 8] @ P(None, a)) on M {
  p = psum(x @ w, b)
  e = einsum("ij,kj->ik", y, y[0:2])
  d = psum(einsum("i,i->", sum(y, axes=1), sum(y, axes=1)), a)
  t = einsum("ij->ji", y)
  return p, e, d, t
})";
    INFO(src);
    Tensor x = ramp(DType::F32, {8, 8}, 31, -15), w = ramp(DType::F32, {8, 3}, 7, -3);
    Tensor y = ramp(DType::F32, {8, 8}, 11, -5);
    auto X = [&](int64_t r, int64_t c) { return x.get(r * 8 + c); };
    auto Y = [&](int64_t r, int64_t c) { return y.get(r * 8 + c); };
    auto out = run(src, "f", {x, w, y});
    check_close(out[0], {8, 3}, [&](int64_t i) {
      double s = 0;
      for (int k = 0; k < 8; ++k) s += X(i / 3, k) * w.get(k * 3 + i % 3);
      return s;
    });
    // Device a holds rows a*rows .. a*rows+rows-1 of y; e uses the first 2 of them.
    const int64_t A = mesh[13] - '0', rows = 8 / A;
    check_close(out[1], {8, 2}, [&](int64_t i) {
      int64_t r = i / 2, k = i % 2, base = (r / rows) * rows;
      double s = 0;
      for (int j = 0; j < 8; ++j) s += Y(r, j) * Y(base + k, j);
      return s;
    });
    double dot = 0;
    for (int r = 0; r < 8; ++r) {
      double rs = 0;
      for (int c = 0; c < 8; ++c) rs += Y(r, c);
      dot += rs * rs;
    }
    check_close(out[2], {}, [&](int64_t) { return dot; });
    check_equal(out[3], DType::F32, {8, 8}, [&](int64_t i) {
      int64_t r = i / 8, c = i % 8;  // device a holds y[rows block a].T as columns block a
      return Y(c, r);
    });
  }
}

TEST_CASE("pad, dynamic_slice and dynamic_update_slice built with ir::Builder",
          "[interp][layout]") {
  // The frontend program only provides the signature; the body is rebuilt by hand.
  auto c = compile_ok(R"(mesh M = (i: 4)
shmap f(x: f32[8, 3] @ P(), u: f32[8, 3] @ P(i)) -> (f32[8, 3] @ P(i), f32[32, 3] @ P(i), f32[40, 3] @ P(i)) on M {
  return u, pbroadcast(x, i), concat([u, u, u, u, u], axis=0)
})");
  ir::Module &m = *c->module;
  ir::Function &f = m.functions[m.find_function("f")];
  f.body.clear();
  ir::Builder b(m, f);
  const ir::ValueId x = f.params[0].value, u = f.params[1].value;
  Attrs ax;
  ax.collective().axes = {0};
  ir::ValueId idx = b.add1(OpCode::AxisIndex, {}, ax);
  Attrs ds;
  ds.layout().dim = 0;
  ds.layout().shape = {2, 3};
  ir::ValueId xv = b.pbroadcast(x, {0});
  ir::ValueId sl = b.add1(OpCode::DynamicSlice, {xv, idx}, ds);  // rows 2r, 2r+1 of x
  Attrs dus;
  dus.layout().dim = 0;
  ir::ValueId up = b.add1(OpCode::DynamicUpdateSlice, {xv, u, idx}, dus);  // u at rows 2r..
  Attrs pad;
  pad.layout().shape = {10, 3};
  pad.layout().start = {1, 0};
  pad.layout().stride = {4, 1};
  ir::ValueId pd = b.add1(OpCode::Pad, {u}, pad);  // u's 2 rows at 1 and 5 of 10
  f.returns = {sl, up, pd};
  interp::InterpOptions o;
  o.check_replication = true;
  Tensor xt = ramp(DType::F32, {8, 3}), ut = ramp(DType::F32, {8, 3}, 13, 20);
  auto out = interp::run_shmap(m, m.find_function("f"), {xt, ut}, o);
  check_equal(out[0], DType::F32, {8, 3}, [&](int64_t i) { return xt.get(i); });
  check_equal(out[1], DType::F32, {32, 3}, [&](int64_t i) {
    int64_t r = i / 3, col = i % 3, dev = r / 8, lr = r % 8;
    bool updated = lr >= 2 * dev && lr < 2 * dev + 2;
    return updated ? ut.get((2 * dev + lr - 2 * dev) * 3 + col) : xt.get(lr * 3 + col);
  });
  check_equal(out[2], DType::F32, {40, 3}, [&](int64_t i) {
    int64_t r = i / 3, col = i % 3, dev = r / 10, lr = r % 10;
    if (lr == 1) return ut.get((2 * dev) * 3 + col);
    if (lr == 5) return ut.get((2 * dev + 1) * 3 + col);
    return 0.0;
  });
}
