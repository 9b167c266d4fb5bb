// spmdrt/cpu_program.h — everything a program emitted by `spmdc build --target cpu` includes.
//
// One header, so that the build can precompile it: with GCC, the spmdc build
// tree (and an install) holds lib/spmdc-pch/cpu_program.h.gch, made with the
// very flags `spmdc build` compiles with, which saves the host compiler
// parsing these headers for every executable (docs/backend.md, "Build
// latency"). The emitted source includes only this header, so it stays a
// plain C++ file any compiler reads without the precompiled header.
//
// The std::vector specialisations the glue uses most (shapes, axis lists, the
// per-device argument and result lists) are instantiated once, at -O3, in
// libspmdrt (cpu/cpu_program_templates.cpp): the glue, compiled at -Og, calls
// those instead of its own unoptimised copies.
#pragma once

#include <bit>
#include <cstdint>
#include <limits>
#include <vector>

#include "spmdrt/checkpoint.h"
#include "spmdrt/collectives.h"
#include "spmdrt/debug_print.h"
#include "spmdrt/hot_code.h"
#include "spmdrt/kernels.h"
#include "spmdrt/mpi.h"
#include "spmdrt/parallel.h"
#include "spmdrt/program.h"
#include "spmdrt/scalar_ops.h"

extern template class std::vector<int64_t>;
extern template class std::vector<int>;
extern template class std::vector<spmd::rt::Tensor>;
