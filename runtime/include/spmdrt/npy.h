// spmdrt/npy.h — reading and writing NumPy .npy files.
//
// Supported: format versions 1.0, 2.0 and 3.0; little-endian '<f4', '<f8',
// '<i4' and '|b1' (also '<b1', '|i1'-free), C order. bf16 tensors are written as
// '<f4' (exact widening); reading returns the file's dtype and the caller casts.
// Every error is a RuntimeError whose message starts with the file's path.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "spmdrt/tensor.h"

namespace spmd::rt {

/// Called with a file's dtype and shape once its header is read, before any
/// data is: it may throw to refuse the file (e.g. a shape the caller cannot use).
using NpyHeaderCheck = std::function<void(DType dtype, const Shape &shape)>;

/// Reads a .npy file. Reads are bounded: the header (at most 1 MiB) first,
/// then exactly the bytes its shape needs (checked with spmdrt/checked.h)
/// and one more to see that nothing follows, so a pipe or a device such as
/// /dev/zero cannot make it read without end. `check_header` runs between.
Tensor read_npy(const std::string &path, const NpyHeaderCheck &check_header = {});
/// The bytes of a .npy file holding a tensor: the header (magic, version,
/// length, dictionary) and the data (bf16 widened exactly to f32).
struct NpyFile {
  std::string header;
  Tensor data;
  std::string_view data_bytes() const;
};
NpyFile encode_npy(const Tensor &tensor);

/// Writes `tensor` to `path` as a .npy file with write_output_file
/// (spmdrt/output_file.h: complete or unchanged, devices written in place).
void write_npy(const std::string &path, const Tensor &tensor);

// ---- block I/O: each process reads or writes only its own box of an array ----

struct NpyHeader {
  DType dtype = DType::F32;
  Shape shape;
  size_t data_offset = 0;  // 0: not a regular file (a pipe, a device), read whole
  // A raw token file (below): the width of its elements in bytes (2 or 4),
  // read as little-endian unsigned integers into i32; 0 for a .npy file.
  int token_width = 0;
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

// ---- input files: .npy, or raw token streams as nanoGPT writes them ----

/// The file an --in NAME=SPEC names: SPEC is a .npy path, or `PATH:u16` /
/// `PATH:u32` for a raw file of little-endian unsigned 16- or 32-bit token ids
/// (no header; nanoGPT's train.bin is `:u16`), which fills an i32[n] parameter.
struct InputFile {
  std::string path;
  int token_width = 0;  // 2 for :u16, 4 for :u32, 0 for .npy
};
InputFile parse_input_file(const std::string &spec);
/// read_npy_header for a .npy file; for a token file, dtype I32 and shape
/// {bytes / width} (its size must be a multiple of the width; it must be a
/// regular file, so that blocks can be read with pread).
NpyHeader read_input_header(const InputFile &file);
/// read_npy_block of either kind; token ids are widened to i32 and one that
/// does not fit (a :u32 id above 2^31 - 1) is an error naming its index.
Tensor read_input_block(const InputFile &file, const NpyHeader &header, const Shape &start,
                        const Shape &extent);
/// The whole input: read_input_header, `check_header`, then the whole array.
Tensor read_input(const InputFile &file, const NpyHeaderCheck &check_header = {});
/// Bytes of array data read by block reads in this process so far (a test
/// sees that a rank reads only its blocks; SPMDRT_TRACE_READS=1 also prints
/// each read on stderr).
int64_t input_bytes_read();
/// Creates (or truncates) `path` holding the header of a `shape` array of
/// `dtype` and room for its data (zeros until written).
void create_npy_file(const std::string &path, DType dtype, const Shape &shape);
/// Writes `block` at `start` into `path`, made by create_npy_file for an array
/// of shape `global` and block's dtype (bf16 widened to f32).
void write_npy_block(const std::string &path, const Shape &global, const Shape &start,
                     const Tensor &block);

}  // namespace spmd::rt
