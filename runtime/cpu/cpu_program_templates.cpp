// cpu/cpu_program_templates.cpp — the std::vector instantiations emitted CPU programs use.
//
// spmdrt/cpu_program.h declares them `extern template`, so an executable of
// `spmdc build --target cpu` (its glue compiled at -Og) calls these, compiled
// at -O3 with the runtime, rather than instantiating its own: shorter host
// compiles and no slower glue (docs/backend.md, "Build latency").
#include <cstdint>
#include <vector>

#include "spmdrt/tensor.h"

template class std::vector<int64_t>;
template class std::vector<int>;
template class std::vector<spmd::rt::Tensor>;
