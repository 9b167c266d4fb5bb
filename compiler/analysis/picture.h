// analysis/picture.h — `spmdc show`: pictures of shardings and communication.
//
// describe_shmap gathers, for one shmap, the layout of every parameter and
// result (analysis/layout.h: which block of the global array each device
// holds) and every collective it runs with its axes and bytes
// (analysis/stats.h). The writers draw that as text for a terminal or as an
// SVG document: per array a grid of its blocks (rows and columns are two
// dimensions of the global array, each cell names the devices holding that
// block and has its own colour, like JAX's visualize_array_sharding), then
// one row per collective with a bar proportional to the bytes it moves.
#pragma once

#include <string>
#include <vector>

#include "analysis/layout.h"
#include "analysis/stats.h"
#include "ir/ir.h"
#include "support/source.h"

namespace spmd {

struct ShownArray {
  std::string role;  // "parameter" or "result"
  std::string name;
  DType dtype = DType::F32;
  std::string spec;  // `P(i, None)`
  ArrayLayout layout;
  int row_dim = -1, col_dim = -1;  // the dimensions drawn (-1: none)
  bool folded = false;             // more than two split dimensions: cells merge blocks
};

struct ShownCollective {
  CollectiveEvent event;
  std::string where;  // `file.spmd:12`
};

struct ShownShmap {
  std::string name, mesh_name;
  rt::Mesh mesh;
  std::vector<ShownArray> arrays;
  std::vector<ShownCollective> collectives;
};

ShownShmap describe_shmap(const ir::Module &module, const ir::Function &function,
                          const SourceManager &sources);

/// One cell of an array's picture: a block (or, when folded, the blocks that
/// share its row and column ranges) and its devices.
struct PictureCell {
  int64_t row = 0, col = 0;                                          // position in the grid
  int64_t row_start = 0, row_size = 1, col_start = 0, col_size = 1;  // global index ranges
  std::vector<int64_t> devices;
};
struct PictureGrid {
  int64_t rows = 1, cols = 1;
  std::vector<PictureCell> cells;  // row-major
};
PictureGrid picture_grid(const ShownArray &array);

/// `0-3 6` — device ids with runs compressed.
std::string device_list(const std::vector<int64_t> &devices);

std::string picture_text(const std::vector<ShownShmap> &shmaps);
std::string picture_svg(const std::vector<ShownShmap> &shmaps);

/// `text` with `&`, `<`, `>` and `"` escaped, for SVG text and attribute values.
std::string xml_escape(const std::string &text);

}  // namespace spmd
