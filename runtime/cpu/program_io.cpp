// runtime/cpu/program_io.cpp — blockwise inputs, printing and outputs of program_main.
//
// The I/O of an executable scales with the mesh: no process holds a whole
// array unless its own block is the whole array.
//   1. Inputs: every process reads each file's header and size (the same
//      checks and messages as `spmdc run`), then only the blocks of its mesh
//      positions (read_npy_block), or makes them with random_block, which gives
//      the blocks of the very arrays `spmdc run --random` makes.
//   2. Printing: format_tensor prints at most the first and last 3 indices of
//      each dimension of a large array; each process sends rank 0 just those
//      elements of the blocks it keeps, as (position, bytes) records.
//   3. Outputs: rank 0 creates each file's temporary (header, full size); after
//      an agreement every process writes the blocks it keeps (one per block,
//      rt::keeps_block, so a replicated output is written once); after another,
//      rank 0 puts them all in place (NpyOutputs, through rt::OutputFiles:
//      fsync, devices in place, modes kept). Any failure removes them all.
#include "program_io.h"

#include <cstring>
#include <map>

#include "internal.h"
#include "spmdrt/kernels.h"

namespace spmd::rt {

std::vector<std::string> value_names(const std::vector<ProgramValue> &values) {
  std::vector<std::string> names;
  for (const ProgramValue &v : values) names.push_back(v.name);
  return names;
}

std::vector<NpyHeader> check_input_files(const ProgramFunction &f,
                                         const std::vector<std::optional<std::string>> &files,
                                         const InputCheck &check, const InputCasts &casts) {
  std::vector<NpyHeader> headers(files.size());
  for (size_t k = 0; k < files.size(); ++k) {
    if (!files[k]) continue;
    try {
      headers[k] = read_input_header(parse_input_file(*files[k]));
    } catch (const RuntimeError &e) {
      throw input_read_error(f.params[k].name, e);
    }
    const auto &size_names = f.params[k].size_names;
    check_token_input(f.params[k].name, f.params[k].dtype, f.params[k].global_shape, *files[k],
                      headers[k], size_names.size() == 1 ? size_names[0] : std::string());
    check_input_file(k, f.params[k].name, f.params[k].dtype, headers[k].dtype, headers[k].shape,
                     *files[k], check, casts);
  }
  return headers;
}

std::vector<std::vector<Tensor>> read_local_inputs(
    const ProgramFunction &f, const std::vector<int64_t> &devices,
    const std::vector<std::optional<std::string>> &files, const std::vector<NpyHeader> &headers,
    const std::optional<uint64_t> &random_seed) {
  std::vector<std::vector<Tensor>> locals(devices.size());
  for (size_t k = 0; k < f.params.size(); ++k) {
    const ProgramValue &p = f.params[k];
    std::map<Shape, Tensor> blocks;  // by start: devices that replicate a block share it
    for (size_t i = 0; i < devices.size(); ++i) {
      const Block b = block_of(f.mesh, p.global_shape, p.spec, devices[i]);
      Tensor &t = blocks[b.start];
      if (!t.defined()) {
        if (!files[k]) {
          t = random_block(p.dtype, p.global_shape, input_seed(*random_seed, k), b.start, b.extent);
        } else {
          try {
            t = read_input_block(parse_input_file(*files[k]), headers[k], b.start, b.extent);
          } catch (const RuntimeError &e) {
            throw input_read_error(p.name, e);
          }
          if (t.dtype() != p.dtype) t = cast(t, p.dtype);  // bf16 from f32, or --cast
        }
      }
      locals[i].push_back(t);
    }
  }
  return locals;
}

namespace {

/// Appends (position in the printed box, element bytes) for every printed
/// element of the global array that lies in `block` (held as `local`).
void pack_printed(const std::vector<std::vector<int64_t>> &printed, const Block &block,
                  const Tensor &local, std::string &out) {
  const size_t rank = printed.size();
  // Per dimension: the printed indices inside the block, as (position, local index).
  std::vector<std::vector<std::pair<int64_t, int64_t>>> inside(rank);
  for (size_t d = 0; d < rank; ++d) {
    for (size_t pos = 0; pos < printed[d].size(); ++pos) {
      const int64_t i = printed[d][pos] - block.start[d];
      if (i >= 0 && i < block.extent[d]) inside[d].emplace_back(static_cast<int64_t>(pos), i);
    }
    if (inside[d].empty()) return;
  }
  Shape printed_shape;
  for (const auto &v : printed) printed_shape.push_back(static_cast<int64_t>(v.size()));
  const auto pstrides = detail::row_major_strides(printed_shape);
  const auto lstrides = detail::row_major_strides(local.shape());
  const size_t esize = dtype_size(local.dtype());
  std::vector<size_t> at(rank, 0);
  while (true) {
    int64_t position = 0, offset = 0;
    for (size_t d = 0; d < rank; ++d) {
      position += inside[d][at[d]].first * pstrides[d];
      offset += inside[d][at[d]].second * lstrides[d];
    }
    out.append(reinterpret_cast<const char *>(&position), sizeof position);
    out.append(reinterpret_cast<const char *>(local.raw()) + static_cast<size_t>(offset) * esize,
               esize);
    size_t d = rank;
    for (; d-- > 0;) {
      if (++at[d] < inside[d].size()) break;
      at[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) return;
  }
}

}  // namespace

std::string format_distributed(Processes &procs, const ProgramFunction &f, size_t k,
                               const std::vector<int64_t> &devices,
                               const std::vector<std::vector<Tensor>> &out, int64_t print_limit) {
  const ProgramValue &r = f.results[k];
  const auto printed = printed_indices(r.global_shape, print_limit);
  std::string mine;
  for (size_t i = 0; i < devices.size(); ++i) {
    const Tensor &local = out.at(i).at(k);
    if (local.dtype() != r.dtype || local.shape() != local_shape(f.mesh, r.global_shape, r.spec))
      throw RuntimeError("result `" + r.name + "` of device " + std::to_string(devices[i]) +
                         " is " + format_type(local.dtype(), local.shape()) + ", expected " +
                         format_type(r.dtype, local_shape(f.mesh, r.global_shape, r.spec)));
    if (keeps_block(f.mesh, r.spec, devices[i]))
      pack_printed(printed, block_of(f.mesh, r.global_shape, r.spec, devices[i]), local, mine);
  }
  const std::vector<std::string> all = procs.gather(mine);
  if (procs.rank() != 0) return "";
  Shape printed_shape;
  for (const auto &v : printed) printed_shape.push_back(static_cast<int64_t>(v.size()));
  Tensor shown = Tensor::zeros(r.dtype, printed_shape);
  const size_t esize = dtype_size(r.dtype);
  const size_t record = sizeof(int64_t) + esize;
  for (const std::string &bytes : all)
    for (size_t at = 0; at + record <= bytes.size(); at += record) {
      int64_t position = 0;
      std::memcpy(&position, bytes.data() + at, sizeof position);
      std::memcpy(shown.raw() + static_cast<size_t>(position) * esize,
                  bytes.data() + at + sizeof position, esize);
    }
  return format_printed(shown, r.global_shape, print_limit);
}

bool write_distributed_outputs(Processes &procs, const ProgramFunction &f,
                               const std::vector<int64_t> &devices,
                               const std::vector<std::vector<Tensor>> &out,
                               const std::vector<std::vector<OutputPath>> &paths,
                               const std::vector<std::string> &inputs,
                               const AgreedStep &agreed_step) {
  bool any = false;
  for (const auto &p : paths) any = any || !p.empty();
  if (!any) return true;
  const bool root = procs.rank() == 0;
  NpyOutputs files(paths, inputs);
  if (!agreed_step([&] {
        if (!root) return;
        std::vector<DType> dtypes;
        std::vector<Shape> shapes;
        for (const ProgramValue &r : f.results) {
          dtypes.push_back(r.dtype);
          shapes.push_back(r.global_shape);
        }
        files.create(dtypes, shapes);
      }))
    return false;
  std::string temporaries = files.temporaries();  // rank 0's, for every process
  procs.broadcast(temporaries);
  if (!root) files.adopt(temporaries);
  const bool written = agreed_step([&] {
    for (size_t k = 0; k < f.results.size(); ++k) {
      const ProgramValue &r = f.results[k];
      for (size_t i = 0; i < devices.size(); ++i)
        if (keeps_block(f.mesh, r.spec, devices[i]))
          files.write_block(k, r.global_shape,
                            block_of(f.mesh, r.global_shape, r.spec, devices[i]).start,
                            out.at(i).at(k));
    }
  });
  if (!written) {
    if (root) files.discard();
    return false;
  }
  return agreed_step([&] {
    if (root) files.commit();
  });
}

}  // namespace spmd::rt
