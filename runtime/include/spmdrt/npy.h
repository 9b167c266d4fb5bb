// spmdrt/npy.h — reading and writing NumPy .npy files.
//
// Supported: format versions 1.0, 2.0 and 3.0; little-endian '<f4', '<f8',
// '<i4' and '|b1' (also '<b1', '|i1'-free), C order. bf16 tensors are written as
// '<f4' (exact widening); reading returns the file's dtype and the caller casts.
// Every error is a RuntimeError whose message starts with the file's path.
#pragma once

#include <string>

#include "spmdrt/tensor.h"

namespace spmd::rt {

Tensor read_npy(const std::string &path);
/// Writes to a temporary file beside `path`, then renames it over `path`, so
/// the file is complete or absent.
void write_npy(const std::string &path, const Tensor &tensor);

}  // namespace spmd::rt
