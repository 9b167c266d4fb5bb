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

// ---- block I/O: each process reads or writes only its own box of an array ----

struct NpyHeader {
  DType dtype = DType::F32;
  Shape shape;
  size_t data_offset = 0;  // 0: not a regular file (a pipe, a device), read whole
};
/// Reads and checks the header of `path`, and that the file's size is exactly
/// what the header promises, without reading the data (same errors as read_npy).
NpyHeader read_npy_header(const std::string &path);
/// The box at `start` of shape `extent` of the array in `path`: reads only those
/// bytes (one pread per contiguous run). The file's dtype.
Tensor read_npy_block(const std::string &path, const NpyHeader &header, const Shape &start,
                      const Shape &extent);
/// The bytes write_npy puts before the data: magic, version, header dictionary
/// (bf16 is described as '<f4'), padded to a multiple of 64.
std::string npy_header_bytes(DType dtype, const Shape &shape);
/// Creates (or truncates) `path` holding the header of a `shape` array of
/// `dtype` and room for its data (zeros until written).
void create_npy_file(const std::string &path, DType dtype, const Shape &shape);
/// Writes `block` at `start` into `path`, made by create_npy_file for an array
/// of shape `global` and block's dtype (bf16 widened to f32).
void write_npy_block(const std::string &path, const Shape &global, const Shape &start,
                     const Tensor &block);

}  // namespace spmd::rt
