// spmdrt/hot_code.h — SPMDRT_HOT_BEGIN / SPMDRT_HOT_END: a region compiled at -O3.
//
// `spmdc build --target cpu` compiles an executable's glue (the per-device
// functions: one runtime call per op, the shmap table, main) at -Og, which
// halves the host compiler's time, and its hot code at -O3: the fused
// elementwise loops it emits and the functions they inline (scalar_ops.h,
// vector_math.h). GCC inlines a function into an -O3 caller only when the
// callee was compiled with compatible options, so those headers put their
// definitions in such a region too. The region only raises the level: with
// -O0 (no __OPTIMIZE__) nothing changes, so a debug build stays a debug build;
// where the file is compiled at -O3 anyway (the runtime library) it changes
// nothing. Only GCC has the pragma; other compilers (clang) and nvcc ignore the
// region, and spmdc compiles everything at -O3 with them (docs/backend.md).
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) && \
    !defined(__INTEL_COMPILER) && defined(__OPTIMIZE__)
#define SPMDRT_HOT_BEGIN _Pragma("GCC push_options") _Pragma("GCC optimize(\"O3\")")
#define SPMDRT_HOT_END _Pragma("GCC pop_options")
#else
#define SPMDRT_HOT_BEGIN
#define SPMDRT_HOT_END
#endif

// SPMDRT_FUSED_LOOP: how `spmdc build --target cpu` declares a fused loop that
// calls vector_math.h's functions. Executables are compiled for baseline x86-64
// (they run on any x86-64 machine), where such a loop runs 4 lanes wide; with
// GCC on x86-64 it is also compiled for AVX-512 (16 lanes) and AVX2 (8 lanes) and
// the loader picks the widest clone the CPU can run. The clones compute the same
// bits: vector_math.h is exactly rounded IEEE operations and selects, and no FMA
// is contracted.
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) && \
    !defined(__INTEL_COMPILER) && defined(__OPTIMIZE__) && defined(__x86_64__)
#define SPMDRT_FUSED_LOOP [[gnu::target_clones("avx512f", "avx2", "default")]] static void
#else
#define SPMDRT_FUSED_LOOP static void
#endif
