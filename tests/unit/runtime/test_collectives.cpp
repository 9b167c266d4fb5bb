// tests/unit/runtime/test_collectives.cpp — simulated collectives on CPU meshes.
//
// Every collective is checked on a 4-device 1-D mesh against hand-computed
// values, then on a (2, 4) mesh over one axis and both; plus determinism,
// error propagation (abort, mismatch, deadlock) and large/1-device meshes.
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "rt_test_util.h"
#include "spmdrt/collectives.h"

using namespace spmd::rt;
using namespace spmd::rt::testing;

namespace {

/// Runs body on every device and returns each device's result.
std::vector<Tensor> run_collect(const Mesh &mesh,
                                const std::function<Tensor(DeviceContext &)> &body) {
  std::vector<Tensor> results(static_cast<size_t>(mesh.num_devices()));
  run_on_mesh(mesh, [&](DeviceContext &ctx) { results[ctx.device()] = body(ctx); });
  return results;
}

const Mesh kLine({{"i", 4}});

}  // namespace

TEST_CASE("psum / pmax on a 4-device line", "[runtime][collectives]") {
  auto out = run_collect(kLine, [](DeviceContext &ctx) {
    const double d = static_cast<double>(ctx.device());
    return ctx.all_reduce(make(DType::F32, {2}, {d, 10 * d}), {0}, ReduceOp::Sum);
  });
  for (const Tensor &t : out) check_equal(t, DType::F32, {2}, {6, 60});
  out = run_collect(kLine, [](DeviceContext &ctx) {
    const double d = static_cast<double>(ctx.device());
    return ctx.all_reduce(make(DType::I32, {2}, {d, -d}), {0}, ReduceOp::Max);
  });
  for (const Tensor &t : out) check_equal(t, DType::I32, {2}, {3, 0});
  out = run_collect(kLine, [](DeviceContext &ctx) {
    return ctx.all_reduce(make(DType::Bool, {1}, {ctx.device() == 2 ? 0.0 : 1.0}), {0},
                          ReduceOp::Min);
  });
  for (const Tensor &t : out) check_equal(t, DType::Bool, {1}, {0});
}

TEST_CASE("a combined psum of several tensors and dtypes", "[runtime][collectives]") {
  // Device d contributes a = [d, 10d], b = [[d], [2d], [3d]] (f32), c = [d, -d] (i32),
  // e = [] (empty f32): one rendezvous per dtype, each component its own sum.
  std::vector<std::vector<Tensor>> out(4);
  run_on_mesh(kLine, [&](DeviceContext &ctx) {
    const double d = static_cast<double>(ctx.device());
    out[ctx.device()] = ctx.all_reduce(
        std::vector<Tensor>{make(DType::F32, {2}, {d, 10 * d}), make(DType::I32, {2}, {d, -d}),
                            make(DType::F32, {3, 1}, {d, 2 * d, 3 * d}),
                            Tensor::empty(DType::F32, {0})},
        {0}, ReduceOp::Sum);
  });
  for (const std::vector<Tensor> &r : out) {
    REQUIRE(r.size() == 4);
    check_equal(r[0], DType::F32, {2}, {6, 60});
    check_equal(r[1], DType::I32, {2}, {6, -6});
    check_equal(r[2], DType::F32, {3, 1}, {6, 12, 18});
    check_equal(r[3], DType::F32, {0}, {});
  }
}

namespace {

/// Bitwise equality of dtype, shape and bytes.
bool same_bits(const Tensor &a, const Tensor &b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw(), b.raw(), static_cast<size_t>(a.numel()) * dtype_size(a.dtype())) == 0;
}

/// A fabric of one device that counts the collectives it is asked for (a group
/// of one: every collective returns the device's own data).
class CountingFabric final : public Fabric {
 public:
  const Mesh &mesh() const override { return mesh_; }
  Tensor all_reduce(int64_t, const Tensor &x, const std::vector<int> &, ReduceOp) override {
    return count(x);
  }
  Tensor all_gather(int64_t, const Tensor &x, const std::vector<int> &, int64_t, bool) override {
    return count(x);
  }
  Tensor reduce_scatter(int64_t, const Tensor &x, const std::vector<int> &, int64_t,
                        bool) override {
    return count(x);
  }
  Tensor all_to_all(int64_t, const Tensor &x, const std::vector<int> &, int64_t, int64_t) override {
    return count(x);
  }
  Tensor ppermute(int64_t, const Tensor &x, const std::vector<int> &,
                  const PermutePairs &) override {
    return count(x);
  }
  void barrier(int64_t) override {}
  int calls = 0;

 private:
  Tensor count(const Tensor &x) {
    ++calls;
    return x.clone();
  }
  Mesh mesh_{{{"i", 1}}};
};

/// Device d's contribution: random values (so that the order of a sum shows).
Tensor part(DType dtype, const Shape &shape, int64_t device, uint64_t k) {
  return random_tensor(dtype, shape, 1000 * k + static_cast<uint64_t>(device));
}

}  // namespace

TEST_CASE("combined all_gather and psum_scatter: the bits of separate ones, one per dtype",
          "[runtime][collectives]") {
  const Mesh mesh({{"x", 2}, {"y", 4}});
  const std::vector<DType> dtypes{DType::F32, DType::I32, DType::F32, DType::BF16, DType::F32};
  struct Case {
    std::vector<int> axes;
    int64_t dim;
    bool tiled;
    std::vector<Shape> gather, scatter;  // component shapes (scatter: dim divisible by n)
  };
  const std::vector<Case> cases{{{1, 0},
                                 0,
                                 true,
                                 {{2, 3}, {4, 2}, {1, 1}, {3, 4}, {0, 2}},
                                 {{8, 3}, {16, 2}, {8, 1}, {24, 1}, {0, 2}}},
                                {{1},
                                 1,
                                 true,
                                 {{2, 3}, {4, 2}, {1, 1}, {3, 4}, {2, 0}},
                                 {{2, 8}, {3, 4}, {1, 4}, {2, 12}, {0, 4}}},
                                {{0},
                                 1,
                                 false,
                                 {{2, 3}, {4, 2}, {1, 1}, {3, 4}, {0, 2}},
                                 {{3, 2}, {1, 2}, {4, 2}, {2, 2}, {0, 2}}},
                                {{1},
                                 2,
                                 false,
                                 {{2, 3}, {4, 2}, {1, 1}, {3, 4}, {0, 2}},
                                 {{3, 2, 4}, {1, 1, 4}, {2, 3, 4}, {1, 2, 4}, {0, 1, 4}}}};
  for (size_t c = 0; c < cases.size(); ++c) {
    const Case &cs = cases[c];
    INFO("case " << c);
    std::vector<std::vector<Tensor>> combined(8), separate(8), scombined(8), sseparate(8);
    run_on_mesh(mesh, [&](DeviceContext &ctx) {
      const int64_t d = ctx.device();
      std::vector<Tensor> xs, ys;
      for (size_t k = 0; k < dtypes.size(); ++k) {
        xs.push_back(part(dtypes[k], cs.gather[k], d, k));
        ys.push_back(part(dtypes[k], cs.scatter[k], d, k + 7));
      }
      combined[d] = ctx.all_gather(xs, cs.axes, cs.dim, cs.tiled);
      scombined[d] = ctx.reduce_scatter(ys, cs.axes, cs.dim, cs.tiled);
      for (const Tensor &x : xs)
        separate[d].push_back(ctx.all_gather(x, cs.axes, cs.dim, cs.tiled));
      for (const Tensor &y : ys)
        sseparate[d].push_back(ctx.reduce_scatter(y, cs.axes, cs.dim, cs.tiled));
    });
    for (int64_t d = 0; d < 8; ++d)
      for (size_t k = 0; k < dtypes.size(); ++k) {
        INFO("device " << d << ", component " << k);
        REQUIRE(combined[d].size() == dtypes.size());
        CHECK(same_bits(combined[d][k], separate[d][k]));
        CHECK(same_bits(scombined[d][k], sseparate[d][k]));
      }
  }
  // By hand, on a 4-device line: device d gathers a = [d, 10d] and b = [[d], [-d]]
  // along dim 0, and scatters c = [d, 2d, 3d, 4d] (sum: 6 * [1, 2, 3, 4]).
  std::vector<std::vector<Tensor>> out(4), sc(4);
  run_on_mesh(kLine, [&](DeviceContext &ctx) {
    const double d = static_cast<double>(ctx.device());
    out[ctx.device()] = ctx.all_gather(
        std::vector<Tensor>{make(DType::F32, {2}, {d, 10 * d}), make(DType::F32, {2, 1}, {d, -d})},
        {0}, 0, true);
    sc[ctx.device()] =
        ctx.reduce_scatter(std::vector<Tensor>{make(DType::F32, {4}, {d, 2 * d, 3 * d, 4 * d}),
                                               make(DType::F32, {4, 1}, {1, 1, 1, 1})},
                           {0}, 0, true);
  });
  for (int64_t d = 0; d < 4; ++d) {
    check_equal(out[d][0], DType::F32, {8}, {0, 0, 1, 10, 2, 20, 3, 30});
    check_equal(out[d][1], DType::F32, {8, 1}, {0, 0, 1, -1, 2, -2, 3, -3});
    check_equal(sc[d][0], DType::F32, {1}, {6.0 * (d + 1)});
    check_equal(sc[d][1], DType::F32, {1, 1}, {4});
  }
}

TEST_CASE("a combined collective is one fabric call per dtype", "[runtime][collectives]") {
  CountingFabric fabric;
  DeviceContext ctx(fabric, 0);
  const std::vector<Tensor> xs{make(DType::F32, {2}, {1, 2}), make(DType::I32, {1}, {3}),
                               make(DType::F32, {1, 2}, {4, 5}), make(DType::F32, {0}, {})};
  auto check_same = [&](const std::vector<Tensor> &ys) {
    REQUIRE(ys.size() == xs.size());
    for (size_t k = 0; k < xs.size(); ++k) CHECK(same_bits(ys[k], xs[k]));
  };
  check_same(ctx.all_gather(xs, {0}, 0, true));
  CHECK(fabric.calls == 2);  // the three f32 tensors in one buffer, the i32 one alone
  check_same(ctx.reduce_scatter(xs, {0}, 0, true));
  CHECK(fabric.calls == 4);
  check_same(ctx.all_reduce(xs, {0}, ReduceOp::Sum));
  CHECK(fabric.calls == 6);
  // A component of more than 128 KiB is not packed (the copies would cost more
  // than the rendezvous saves): the two small f32 tensors share one call.
  const std::vector<Tensor> big{make(DType::F32, {1}, {1}), Tensor::full(DType::F32, {32769}, 2),
                                make(DType::F32, {1}, {3})};
  const std::vector<Tensor> summed = ctx.all_reduce(big, {0}, ReduceOp::Sum);
  CHECK(fabric.calls == 8);
  for (size_t k = 0; k < big.size(); ++k) CHECK(same_bits(summed[k], big[k]));
  // Exactly 128 KiB (32768 f32) is still packed with the others: one call.
  const std::vector<Tensor> edge{make(DType::F32, {1}, {1}), Tensor::full(DType::F32, {32768}, 2)};
  const std::vector<Tensor> edge_summed = ctx.all_reduce(edge, {0}, ReduceOp::Sum);
  CHECK(fabric.calls == 9);
  for (size_t k = 0; k < edge.size(); ++k) CHECK(same_bits(edge_summed[k], edge[k]));
  // Bool components are refused when packed with others too, as alone.
  const std::vector<Tensor> flags{Tensor::zeros(DType::Bool, {2}), Tensor::zeros(DType::Bool, {2})};
  CHECK_THROWS_WITH(ctx.all_reduce(flags, {0}, ReduceOp::Sum),
                    Catch::Contains("psum does not accept bool"));
  CHECK_THROWS_WITH(ctx.reduce_scatter(flags, {0}, 0, true),
                    Catch::Contains("psum_scatter does not accept bool"));
}

TEST_CASE("psum_scatter on a 4-device line", "[runtime][collectives]") {
  auto tiled = run_collect(kLine, [](DeviceContext &ctx) {
    Tensor x = Tensor::empty(DType::F64, {8});
    for (int64_t i = 0; i < 8; ++i) x.set(i, 10.0 * ctx.device() + i);
    return ctx.reduce_scatter(x, {0}, 0, true);
  });
  for (int64_t r = 0; r < 4; ++r)
    check_equal(tiled[r], DType::F64, {2}, {60.0 + 8 * r, 64.0 + 8 * r});
  auto untiled = run_collect(kLine, [](DeviceContext &ctx) {
    Tensor x = Tensor::empty(DType::I32, {2, 4});  // scatter along dim 1 of size 4
    for (int64_t i = 0; i < 8; ++i) x.set(i, static_cast<double>(i * (ctx.device() + 1)));
    return ctx.reduce_scatter(x, {0}, 1, false);
  });
  // sum over d of i*(d+1) = 10*i; device r keeps column r of each row.
  for (int64_t r = 0; r < 4; ++r)
    check_equal(untiled[r], DType::I32, {2}, {10.0 * r, 10.0 * (4 + r)});
  CHECK_THROWS_WITH(run_on_mesh(kLine,
                                [](DeviceContext &ctx) {
                                  ctx.reduce_scatter(Tensor::zeros(DType::F32, {6}), {0}, 0, true);
                                }),
                    Catch::Contains("not divisible"));
}

TEST_CASE("all_gather on a 4-device line", "[runtime][collectives]") {
  auto tiled = run_collect(kLine, [](DeviceContext &ctx) {
    const double d = static_cast<double>(ctx.device());
    return ctx.all_gather(make(DType::BF16, {2}, {d, -d}), {0}, 0, true);
  });
  for (const Tensor &t : tiled) check_equal(t, DType::BF16, {8}, {0, 0, 1, -1, 2, -2, 3, -3});
  auto untiled = run_collect(kLine, [](DeviceContext &ctx) {
    const double d = static_cast<double>(ctx.device());
    return ctx.all_gather(make(DType::F32, {2}, {d, -d}), {0}, 1, false);
  });
  for (const Tensor &t : untiled) check_equal(t, DType::F32, {2, 4}, {0, 1, 2, 3, 0, -1, -2, -3});
  auto columns = run_collect(kLine, [](DeviceContext &ctx) {
    const double d = static_cast<double>(ctx.device());
    return ctx.all_gather(make(DType::I32, {2, 1}, {d, 10 + d}), {0}, 1, true);
  });
  for (const Tensor &t : columns) check_equal(t, DType::I32, {2, 4}, {0, 1, 2, 3, 10, 11, 12, 13});
}

TEST_CASE("all_to_all on a 4-device line", "[runtime][collectives]") {
  auto out = run_collect(kLine, [](DeviceContext &ctx) {
    Tensor x = Tensor::empty(DType::I32, {4});
    for (int64_t j = 0; j < 4; ++j) x.set(j, 10.0 * ctx.device() + j);
    return ctx.all_to_all(x, {0}, 0, 0);
  });
  for (int64_t r = 0; r < 4; ++r) {
    check_equal(out[r], DType::I32, {4}, {0.0 + r, 10.0 + r, 20.0 + r, 30.0 + r});
  }
  // x_s: [2, 4] with value 100*s + 10*row + col; split along 1 (cols), concat along 0.
  auto out2 = run_collect(kLine, [](DeviceContext &ctx) {
    Tensor x = Tensor::empty(DType::F32, {2, 4});
    for (int64_t row = 0; row < 2; ++row)
      for (int64_t col = 0; col < 4; ++col)
        x.set(row * 4 + col, 100.0 * ctx.device() + 10 * row + col);
    return ctx.all_to_all(x, {0}, 1, 0);
  });
  for (int64_t r = 0; r < 4; ++r) {
    std::vector<double> expected;  // [8, 1]: for each sender s, rows 0 and 1 at column r
    for (int64_t s = 0; s < 4; ++s)
      for (int64_t row = 0; row < 2; ++row) expected.push_back(100.0 * s + 10 * row + r);
    check_equal(out2[r], DType::F32, {8, 1}, expected);
  }
}

TEST_CASE("ppermute and axis_index on a 4-device line", "[runtime][collectives]") {
  auto out = run_collect(kLine, [](DeviceContext &ctx) {
    const double d = static_cast<double>(ctx.axis_index({0}));
    return ctx.ppermute(make(DType::F32, {2}, {d + 1, 2 * d + 1}), {0}, {{0, 1}, {1, 2}, {2, 3}});
  });
  check_equal(out[0], DType::F32, {2}, {0, 0});  // nobody sends to rank 0
  for (int64_t r = 1; r < 4; ++r) check_equal(out[r], DType::F32, {2}, {double(r), 2.0 * r - 1});
  auto cyclic = run_collect(kLine, [](DeviceContext &ctx) {
    return ctx.ppermute(Tensor::scalar(DType::I32, double(ctx.device())), {0},
                        {{0, 3}, {1, 0}, {2, 1}, {3, 2}});
  });
  for (int64_t r = 0; r < 4; ++r) check_equal(cyclic[r], DType::I32, {}, {double((r + 1) % 4)});
  CHECK_THROWS_WITH(
      run_on_mesh(kLine,
                  [](DeviceContext &ctx) {
                    ctx.ppermute(Tensor::scalar(DType::F32, 0), {0}, {{0, 1}, {2, 1}});
                  }),
      Catch::Contains("not one-to-one"));
  CHECK_THROWS_WITH(run_on_mesh(kLine,
                                [](DeviceContext &ctx) {
                                  ctx.ppermute(Tensor::scalar(DType::F32, 0), {0}, {{0, 4}});
                                }),
                    Catch::Contains("out of range"));
}

TEST_CASE("collectives on a (2, 4) mesh", "[runtime][collectives]") {
  const Mesh mesh({{"x", 2}, {"y", 4}});
  auto body = [](const std::vector<int> &axes) {
    return [axes](DeviceContext &ctx) {
      return ctx.all_reduce(Tensor::scalar(DType::I32, double(ctx.device())), axes, ReduceOp::Sum);
    };
  };
  auto over_y = run_collect(mesh, body({1}));
  auto over_x = run_collect(mesh, body({0}));
  auto over_both = run_collect(mesh, body({0, 1}));
  for (int64_t d = 0; d < 8; ++d) {
    const int64_t i = d / 4, j = d % 4;
    check_equal(over_y[d], DType::I32, {}, {16.0 * i + 6});
    check_equal(over_x[d], DType::I32, {}, {4.0 + 2 * j});
    check_equal(over_both[d], DType::I32, {}, {28});
  }
  auto gathered = run_collect(mesh, [](DeviceContext &ctx) {
    return ctx.all_gather(Tensor::full(DType::I32, {1}, double(ctx.device())), {1, 0}, 0, true);
  });
  for (const Tensor &t : gathered) check_equal(t, DType::I32, {8}, {0, 4, 1, 5, 2, 6, 3, 7});
  auto gathered_x = run_collect(mesh, [](DeviceContext &ctx) {
    return ctx.all_gather(Tensor::full(DType::I32, {1}, double(ctx.device())), {0}, 0, true);
  });
  for (int64_t d = 0; d < 8; ++d)
    check_equal(gathered_x[d], DType::I32, {2}, {d % 4 + 0.0, d % 4 + 4.0});
  auto index = run_collect(mesh, [](DeviceContext &ctx) {
    return make(
        DType::I32, {3},
        {double(ctx.axis_index({0})), double(ctx.axis_index({1})), double(ctx.axis_index({1, 0}))});
  });
  check_equal(index[6], DType::I32, {3}, {1, 2, 5});
  auto shifted = run_collect(mesh, [](DeviceContext &ctx) {
    return ctx.ppermute(Tensor::scalar(DType::I32, double(ctx.device())), {1},
                        {{0, 1}, {1, 2}, {2, 3}, {3, 0}});
  });
  check_equal(shifted[4], DType::I32, {}, {7});
  check_equal(shifted[5], DType::I32, {}, {4});
  // Over (y, x) the ranks are y * 2 + x (the first named axis is major); each
  // rank r sends to r + 1, so device (i, j) receives from rank 2j + i - 1.
  auto ring = run_collect(mesh, [](DeviceContext &ctx) {
    std::vector<std::pair<int64_t, int64_t>> perm;
    for (int64_t r = 0; r < 8; ++r) perm.emplace_back(r, (r + 1) % 8);
    return ctx.ppermute(Tensor::scalar(DType::I32, double(ctx.device())), {1, 0}, perm);
  });
  for (int64_t d = 0; d < 8; ++d) {
    const int64_t i = d / 4, j = d % 4, source_rank = (2 * j + i + 7) % 8;
    const int64_t source = (source_rank % 2) * 4 + source_rank / 2;
    check_equal(ring[d], DType::I32, {}, {double(source)});
  }
  CHECK_THROWS_WITH(run_on_mesh(mesh,
                                [](DeviceContext &ctx) {
                                  ctx.ppermute(Tensor::scalar(DType::F32, 0), {0, 1}, {{0, 8}});
                                }),
                    Catch::Contains("out of range for a group of 8"));
  auto scattered = run_collect(mesh, [](DeviceContext &ctx) {
    Tensor x = iota(DType::F32, {8}, 0);  // every device: 0..7
    return ctx.reduce_scatter(x, {0, 1}, 0, true);
  });
  for (int64_t d = 0; d < 8; ++d) check_equal(scattered[d], DType::F32, {1}, {8.0 * d});
}

TEST_CASE("reductions are deterministic and in rank order", "[runtime][collectives]") {
  const Mesh mesh({{"d", 8}});
  auto body = [](DeviceContext &ctx) {
    Tensor x = random_tensor(DType::F32, {1000}, 1000 + ctx.device());
    Tensor big =
        binary(BinaryOp::Mul, x, Tensor::scalar(DType::F32, std::pow(10.0, ctx.device() % 4)));
    return ctx.all_reduce(big, {0}, ReduceOp::Sum);
  };
  auto first = run_collect(mesh, body);
  auto second = run_collect(mesh, body);
  Tensor reference;
  for (int64_t d = 0; d < 8; ++d) {  // ((x0 + x1) + x2) + ...
    Tensor x = random_tensor(DType::F32, {1000}, 1000 + d);
    Tensor big = binary(BinaryOp::Mul, x, Tensor::scalar(DType::F32, std::pow(10.0, d % 4)));
    reference = d == 0 ? big : binary(BinaryOp::Add, reference, big);
  }
  for (int64_t d = 0; d < 8; ++d) {
    CHECK(first[d].bitwise_equal(second[d]));
    CHECK(first[d].bitwise_equal(first[0]));
    CHECK(first[d].bitwise_equal(reference));
  }
}

TEST_CASE("one-phase (small) and two-phase (large) collectives give the reference's bits",
          "[runtime][collectives]") {
  // 32 KiB of input per member is the fabric's cut-off (all_reduce's input
  // counted n times): f32 sizes on both sides of it, every collective against values computed here,
  // element by element in rank order. The 2-device mesh takes the spinning wait on a machine with
  // at least 2 cores, the 8-device one the sleeping wait on a smaller one.
  for (int64_t devices : {2, 8}) {
    const Mesh mesh({{"d", devices}});
    for (int64_t count : {int64_t{1024}, int64_t{8192}, int64_t{8192 + 8 * 64}}) {
      CAPTURE(devices, count);
      auto input = [&](int64_t d) {  // magnitudes 1..1000: the order shows in the bits
        Tensor x = random_tensor(DType::F32, {count}, 77 + d);
        return binary(BinaryOp::Mul, x, Tensor::scalar(DType::F32, std::pow(10.0, d % 4)));
      };
      Tensor sum;
      for (int64_t d = 0; d < devices; ++d)
        sum = d == 0 ? input(0) : binary(BinaryOp::Add, sum, input(d));
      std::vector<Tensor> reduced(static_cast<size_t>(devices)),
          gathered(static_cast<size_t>(devices)), scattered(static_cast<size_t>(devices)),
          exchanged(static_cast<size_t>(devices)), shifted(static_cast<size_t>(devices));
      run_on_mesh(mesh, [&](DeviceContext &ctx) {
        const int64_t me = ctx.device();
        const Tensor x = input(me);
        // Repeated, so that waits race with wake-ups many times over.
        for (int rep = 0; rep < 20; ++rep) {
          reduced[me] = ctx.all_reduce(x, {0}, ReduceOp::Sum);
          gathered[me] = ctx.all_gather(x, {0}, 0, true);
          scattered[me] = ctx.reduce_scatter(x, {0}, 0, true);
          exchanged[me] = ctx.all_to_all(x, {0}, 0, 0);
          PermutePairs ring;
          for (int64_t r = 0; r < devices; ++r) ring.emplace_back(r, (r + 1) % devices);
          shifted[me] = ctx.ppermute(x, {0}, ring);
        }
      });
      const int64_t block = count / devices;
      auto part = [&](const Tensor &t, int64_t b) {
        const std::vector<int64_t> start{b * block}, limit{(b + 1) * block}, stride{1};
        return slice(t, start, limit, stride);
      };
      for (int64_t d = 0; d < devices; ++d) {
        CHECK(reduced[d].bitwise_equal(sum));
        std::vector<Tensor> all, mine;
        for (int64_t s = 0; s < devices; ++s) {
          all.push_back(input(s));
          mine.push_back(part(input(s), d));
        }
        CHECK(gathered[d].bitwise_equal(concat(all, 0)));
        CHECK(scattered[d].bitwise_equal(part(sum, d)));
        CHECK(exchanged[d].bitwise_equal(concat(mine, 0)));
        CHECK(shifted[d].bitwise_equal(input((d + devices - 1) % devices)));
      }
    }
  }
}

TEST_CASE("collectives over a later dimension give the reference's bits, in rank order",
          "[runtime][collectives]") {
  // psum_scatter, all_gather and all_to_all over dimension 1 (and 2 of a rank-3 input),
  // where a member's block is strided rows: f32, bf16 and i32, one- and two-phase sizes,
  // each against slices and concats computed here; the sum of element e is
  // ((x0[e] + x1[e]) + x2[e]) + ..., accumulated in f32 for bf16 and rounded once.
  const int64_t devices = 8;
  const Mesh mesh({{"d", devices}});
  for (DType dtype : {DType::F32, DType::BF16, DType::I32}) {
    // The last two: reduce_scatter's rows span several tiles of its 4096-element chunk,
    // and a row longer than a chunk is reduced in pieces.
    for (const Shape &shape :
         {Shape{4, 16}, Shape{64, 256}, Shape{3, 32, 40}, Shape{5000, 16}, Shape{3, 8 * 4500}}) {
      CAPTURE(dtype_name(dtype), shape);
      const auto rank = static_cast<int64_t>(shape.size());
      auto input = [&](int64_t d) {  // magnitudes 1..1000: the order shows in the bits
        Tensor x = random_tensor(DType::F32, shape, 300 + d);
        x = binary(BinaryOp::Mul, x, Tensor::scalar(DType::F32, std::pow(10.0, d % 4)));
        return cast(x, dtype);
      };
      const DType wide = dtype == DType::BF16 ? DType::F32 : dtype;
      Tensor sum;
      for (int64_t d = 0; d < devices; ++d) {
        const Tensor x = cast(input(d), wide);
        sum = d == 0 ? x : binary(BinaryOp::Add, sum, x);
      }
      sum = cast(sum, dtype);
      auto part = [&](const Tensor &t, int64_t dim, int64_t b) {  // block b of n along dim
        std::vector<int64_t> start(rank, 0), limit(t.shape()), stride(rank, 1);
        const int64_t size = t.shape()[dim] / devices;
        start[dim] = b * size;
        limit[dim] = (b + 1) * size;
        return slice(t, start, limit, stride);
      };
      const int64_t last = rank - 1;
      std::vector<Tensor> scattered(devices), gathered(devices), swapped(devices), moved(devices);
      run_on_mesh(mesh, [&](DeviceContext &ctx) {
        const int64_t me = ctx.device();
        const Tensor x = input(me);
        scattered[me] = ctx.reduce_scatter(x, {0}, last, true);
        gathered[me] = ctx.all_gather(part(x, last, me), {0}, last, true);
        swapped[me] = ctx.all_to_all(x, {0}, last, last);
        moved[me] = ctx.all_to_all(x, {0}, last, 0);
      });
      for (int64_t d = 0; d < devices; ++d) {
        CAPTURE(d);
        CHECK(scattered[d].bitwise_equal(part(sum, last, d)));
        std::vector<Tensor> blocks, mine;
        for (int64_t s = 0; s < devices; ++s) {
          blocks.push_back(part(input(s), last, s));
          mine.push_back(part(input(s), last, d));
        }
        CHECK(gathered[d].bitwise_equal(concat(blocks, last)));
        CHECK(swapped[d].bitwise_equal(concat(mine, last)));
        CHECK(moved[d].bitwise_equal(concat(mine, 0)));
      }
    }
  }
}

TEST_CASE("a small ppermute waits only for the sender; a sender runs ahead a bounded way",
          "[runtime][collectives]") {
  // Rank 0 only sends, so it never waits for a receiver; 200 rounds is far
  // more than the fabric lets it run ahead. Every receiver must still get
  // round k's value in round k, in order, whoever arrives first.
  const int rounds = 200;
  std::vector<std::vector<double>> got(4);
  run_on_mesh(kLine, [&](DeviceContext &ctx) {
    const int64_t me = ctx.device();
    for (int k = 0; k < rounds; ++k) {
      if (me == 3 && k % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
      Tensor x = Tensor::scalar(DType::F32, 1000.0 * me + k);
      Tensor y = ctx.ppermute(x, {0}, {{0, 1}, {1, 2}, {2, 3}});
      got[me].push_back(y.get(0));
    }
  });
  for (int64_t r = 0; r < 4; ++r) {
    REQUIRE(got[r].size() == static_cast<size_t>(rounds));
    for (int k = 0; k < rounds; ++k) CHECK(got[r][k] == (r == 0 ? 0.0 : 1000.0 * (r - 1) + k));
  }
  // A receiver whose sender skipped the ppermute is a deadlock, not a hang.
  CHECK_THROWS_WITH(
      run_on_mesh(kLine,
                  [](DeviceContext &ctx) {
                    if (ctx.device() == 0) return;
                    ctx.ppermute(Tensor::scalar(DType::F32, 1), {0}, {{0, 1}, {1, 2}, {2, 3}});
                  }),
      Catch::Contains("collective deadlock") &&
          Catch::Contains("device 1: ppermute over (i) (collective #0)"));
  // Members that disagree on the pairs are reported.
  CHECK_THROWS_WITH(run_on_mesh(kLine,
                                [](DeviceContext &ctx) {
                                  PermutePairs pairs{{0, 1}, {1, 2}, {2, 3}};
                                  if (ctx.device() == 2) pairs = {{0, 1}};
                                  ctx.ppermute(Tensor::scalar(DType::F32, 1), {0}, pairs);
                                }),
                    Catch::Contains("collective mismatch"));
}

TEST_CASE("a failing device aborts the others", "[runtime][collectives]") {
  std::atomic<int> aborted{0};
  CHECK_THROWS_WITH(run_on_mesh(kLine,
                                [&](DeviceContext &ctx) {
                                  if (ctx.device() == 2) throw RuntimeError("device 2 failed");
                                  try {
                                    ctx.all_reduce(Tensor::scalar(DType::F32, 1), {0},
                                                   ReduceOp::Sum);
                                  } catch (const CollectiveAborted &) {
                                    ++aborted;
                                    throw;
                                  }
                                }),
                    "device 2 failed");
  CHECK(aborted == 3);
  // A failure in a later phase (after some collectives succeeded), standard exception type.
  CHECK_THROWS_WITH(run_on_mesh(Mesh({{"x", 2}, {"y", 4}}),
                                [](DeviceContext &ctx) {
                                  ctx.barrier();
                                  if (ctx.device() == 7) throw std::runtime_error("late failure");
                                  ctx.all_gather(Tensor::scalar(DType::F32, 1), {0, 1}, 0, false);
                                }),
                    "late failure");
}

TEST_CASE("collective misuse is reported, never hangs", "[runtime][collectives]") {
  CHECK_THROWS_WITH(run_on_mesh(kLine,
                                [](DeviceContext &ctx) {
                                  if (ctx.device() == 0) return;  // skips the collective
                                  ctx.all_reduce(Tensor::scalar(DType::F32, 1), {0}, ReduceOp::Sum);
                                }),
                    Catch::Contains("collective deadlock") &&
                        Catch::Contains("device 0: finished") &&
                        Catch::Contains("device 1: all_reduce over (i) (collective #0)") &&
                        Catch::Contains("device 3: all_reduce over (i) (collective #0)"));
  CHECK_THROWS_WITH(run_on_mesh(kLine,
                                [](DeviceContext &ctx) {
                                  Tensor x = Tensor::zeros(DType::F32, {4});
                                  if (ctx.device() == 3) {
                                    ctx.all_gather(x, {0}, 0, true);
                                  } else {
                                    ctx.all_reduce(x, {0}, ReduceOp::Sum);
                                  }
                                }),
                    Catch::Contains("collective mismatch"));
  CHECK_THROWS_WITH(run_on_mesh(kLine,
                                [](DeviceContext &ctx) {
                                  Tensor x = Tensor::zeros(DType::F32, {ctx.device() == 1 ? 3 : 4});
                                  ctx.all_reduce(x, {0}, ReduceOp::Sum);
                                }),
                    Catch::Contains("collective mismatch"));
}

TEST_CASE("large and trivial meshes", "[runtime][collectives]") {
  const Mesh big({{"a", 16}, {"b", 16}});
  auto out = run_collect(big, [](DeviceContext &ctx) {
    Tensor s = ctx.all_reduce(Tensor::scalar(DType::I32, 1), {0, 1}, ReduceOp::Sum);
    ctx.barrier();
    Tensor row =
        ctx.all_reduce(Tensor::scalar(DType::I32, double(ctx.device())), {1}, ReduceOp::Sum);
    return binary(BinaryOp::Add, s, row);
  });
  for (int64_t d = 0; d < 256; ++d) {
    const double row_sum = 16.0 * (d / 16) * 16 + 120;
    check_equal(out[d], DType::I32, {}, {256 + row_sum});
  }
  const Mesh one({{"x", 1}});
  auto single = run_collect(one, [](DeviceContext &ctx) {
    Tensor x = make(DType::F32, {2}, {1, 2});
    Tensor y = ctx.all_reduce(x, {0}, ReduceOp::Sum);
    y = ctx.all_gather(y, {0}, 0, true);
    y = ctx.all_to_all(y, {0}, 0, 0);
    y = ctx.reduce_scatter(y, {0}, 0, true);
    ctx.barrier();
    return ctx.ppermute(y, {0}, {{0, 0}});
  });
  check_equal(single[0], DType::F32, {2}, {1, 2});
  auto no_axes = run_collect(Mesh(), [](DeviceContext &ctx) {
    ctx.barrier();
    return Tensor::scalar(DType::I32, double(ctx.device()));
  });
  check_equal(no_axes[0], DType::I32, {}, {0});
}

TEST_CASE("a device's counted peak through a two-phase all_reduce is the same every run",
          "[runtime][collectives][memory]") {
  // Each device holds x (f32[8192], 32 KiB; an all_reduce counts 4 x 32 KiB:
  // two-phase), reduces it into y, drops x and makes z of the same size.
  // Counted by hand: x and y while the collective runs, y and z after it,
  // and while z is filled the 4-byte scalar Tensor::full converts its value
  // through: 65,540 bytes on every device, whichever thread arrives first (the shared
  // reduction buffer is counted on no device) or leaves last (x is freed
  // before any member leaves: nobody still holds it when z is made).
  constexpr int64_t kFloats = 8192, kBytes = kFloats * 4;
  for (int repeat = 0; repeat < 20; ++repeat) {
    std::vector<std::shared_ptr<MemoryMeter>> meters;
    for (int d = 0; d < 4; ++d) meters.push_back(std::make_shared<MemoryMeter>());
    run_on_mesh(kLine, [&](DeviceContext &ctx) {
      MeterScope scope(meters[static_cast<size_t>(ctx.device())]);
      if (ctx.device() == repeat % 4)  // one device arrives late
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      Tensor x = Tensor::full(DType::F32, {kFloats}, 1.0);
      Tensor y = ctx.all_reduce(x, {0}, ReduceOp::Sum);
      x = Tensor();
      Tensor z = Tensor::full(DType::F32, {kFloats}, 2.0);
      CHECK(y.get(0) == 4.0);
      CHECK(z.get(0) == 2.0);
    });
    for (int d = 0; d < 4; ++d) {
      INFO("run " << repeat << ", device " << d);
      CHECK(meters[static_cast<size_t>(d)]->peak() == 2 * kBytes + 4);
      CHECK(meters[static_cast<size_t>(d)]->live() == 0);
    }
  }
}
