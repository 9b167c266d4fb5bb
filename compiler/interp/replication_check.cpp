// interp/replication_check.cpp — comparing per-device value hashes after a run.
//
// See interp/replication.h. Hashing happens on each device's own thread as it
// computes the value, so the check costs one pass over each result's bytes and
// no synchronisation; the comparison runs once, after the mesh has finished.
#include <cstring>
#include <string>

#include "interp/replication.h"

namespace spmd::interp::detail {
namespace {

constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ULL;
constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4FULL;

inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline uint64_t round(uint64_t acc, uint64_t word) {
  return rotl(acc ^ (word * kPrime2), 31) * kPrime1;
}
inline uint64_t finish(uint64_t h) {
  h ^= h >> 33;
  h *= kPrime2;
  h ^= h >> 29;
  h *= kPrime1;
  return h ^ (h >> 32);
}

std::string coords_str(const rt::Mesh &mesh, int64_t device) {
  std::vector<int64_t> c = mesh.coords(device);
  std::string s = "device " + std::to_string(device) + " (";
  for (size_t a = 0; a < c.size(); ++a)
    s += (a ? ", " : "") + mesh.axes()[a].name + "=" + std::to_string(c[a]);
  return s + ")";
}

[[noreturn]] void report(const rt::Mesh &mesh, const Record &r, int axis, int64_t d0, int64_t d1) {
  const ir::Value &v = r.function->values.at(static_cast<size_t>(r.value));
  std::string what = v.name.empty() ? "a value" : "`" + v.name + "`";
  std::string by = r.instr ? "`" + std::string(op_spelling(r.instr->op)) + "`"
                           : std::string("the in_spec of an input");
  std::string where =
      r.function->kind == ir::FunctionKind::Def
          ? " in `" +
                (r.function->source_name.empty() ? r.function->name : r.function->source_name) + "`"
          : "";
  std::string message = "replication check failed: " + what + " of type " + type_str(v.type, mesh) +
                        ", computed by " + by + where + ", is invariant along mesh axis `" +
                        mesh.axes()[axis].name + "` by its type, but " + coords_str(mesh, d0) +
                        " and " + coords_str(mesh, d1) + " hold different bits";
  SourceSpan span = r.instr ? r.instr->span : v.span;
  throw ReplicationError(span, std::move(message));
}

}  // namespace

uint64_t hash_tensor(const rt::Tensor &t) {
  uint64_t h = kPrime1 ^ (static_cast<uint64_t>(t.dtype()) << 56);
  for (int64_t d : t.shape()) h = round(h, static_cast<uint64_t>(d));
  h = round(h, static_cast<uint64_t>(t.rank()));
  const size_t n = t.nbytes();
  const std::byte *p = t.raw();
  size_t i = 0;
  // Four independent lanes keep the multiplier pipeline busy.
  uint64_t lane[4] = {h, h ^ kPrime2, rotl(h, 17), rotl(h, 41)};
  for (; i + 32 <= n; i += 32) {
    uint64_t w[4];
    std::memcpy(w, p + i, 32);
    for (int k = 0; k < 4; ++k) lane[k] = round(lane[k], w[k]);
  }
  h = rotl(lane[0], 1) + rotl(lane[1], 7) + rotl(lane[2], 12) + rotl(lane[3], 18);
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = round(h, w);
  }
  if (i < n) {
    uint64_t w = 0;
    std::memcpy(&w, p + i, n - i);
    h = round(h, w ^ (static_cast<uint64_t>(n - i) << 60));
  }
  return finish(h ^ n);
}

void check_replication(const rt::Mesh &mesh, const std::vector<std::vector<Record>> &records) {
  const int64_t devices = mesh.num_devices();
  const size_t count = records.at(0).size();
  for (const auto &r : records)
    if (r.size() != count)
      throw std::logic_error("replication check: devices executed different numbers of values");
  const int num_axes = static_cast<int>(mesh.axes().size());
  for (size_t e = 0; e < count; ++e) {
    const Record &first = records[0][e];
    const AxisSet variance = first.function->type(first.value).variance;
    for (int axis = 0; axis < num_axes; ++axis) {
      if (variance.contains(axis) || mesh.axis_size(axis) == 1) continue;
      for (int64_t d = 0; d < devices; ++d) {
        std::vector<int64_t> c = mesh.coords(d);
        if (c[axis] != 0) continue;  // d leads its group along `axis`
        for (int64_t k = 1; k < mesh.axis_size(axis); ++k) {
          c[axis] = k;
          const int64_t other = mesh.device_at(c);
          if (records[other][e].hash != records[d][e].hash)
            report(mesh, records[d][e], axis, d, other);
        }
      }
    }
  }
}

}  // namespace spmd::interp::detail
