// uses_runtime.cpp — a C++ program of another project that links the installed
// spmdrt (find_package(spmdc) or pkg-config): an all-reduce on a simulated
// 4-device mesh and a BLAS matmul, checked against values computed by hand.
#include <spmdrt/collectives.h>
#include <spmdrt/kernels.h>

#include <cstdio>
#include <vector>

int main() {
  using namespace spmd::rt;
  Mesh mesh({{"i", 4}});
  std::vector<double> got(4, 0.0);
  run_on_mesh(mesh, [&](DeviceContext &ctx) {
    Tensor x = Tensor::full(DType::F32, {2}, static_cast<double>(ctx.device() + 1));
    got[static_cast<size_t>(ctx.device())] = ctx.all_reduce(x, {0}, ReduceOp::Sum).get(1);
  });
  for (double g : got)
    if (g != 10.0) {  // 1 + 2 + 3 + 4 on every device
      std::printf("all_reduce gave %g, expected 10\n", g);
      return 1;
    }
  // [[1, 1], [1, 1]] @ [[2, 2], [2, 2]] = [[4, 4], [4, 4]]
  Tensor c = matmul(Tensor::full(DType::F32, {2, 2}, 1.0), Tensor::full(DType::F32, {2, 2}, 2.0));
  if (c.get(3) != 4.0) {
    std::printf("matmul gave %g, expected 4\n", c.get(3));
    return 1;
  }
  std::printf("uses_runtime: ok\n");
  return 0;
}
