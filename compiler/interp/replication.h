// interp/replication.h — run-time check that invariant values are replicated.
//
// Internal to the interpreter. While a shmap runs with check_replication on,
// each device appends one Record per value it computes (a 64-bit hash of the
// value's dtype, shape and bytes), in execution order. Every device executes
// the same instruction sequence, so record e of every device describes the
// same value. check_replication then compares, for every record and every mesh
// axis outside the value's variance, the hashes of the devices that differ
// only along that axis, and reports the first disagreement in execution order
// as a ReplicationError at the op that computed the value.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "interp/interpreter.h"

namespace spmd::interp::detail {

struct Record {
  const ir::Function *function = nullptr;  // where the value lives
  ir::ValueId value = ir::kNoValue;
  const ir::Instr *instr = nullptr;  // the op that computed it; null for shmap inputs
  uint64_t hash = 0;
};

/// Hash of dtype, shape and every byte (word-at-a-time mixing; equal tensors
/// hash equal, different ones collide with probability about 2^-64).
uint64_t hash_tensor(const rt::Tensor &tensor);

/// Compares the records of all devices (indexed by device); throws
/// ReplicationError for the first value that differs along an axis its type
/// calls invariant.
void check_replication(const rt::Mesh &mesh, const std::vector<std::vector<Record>> &records);

}  // namespace spmd::interp::detail
