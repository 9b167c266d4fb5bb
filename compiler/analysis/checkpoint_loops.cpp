// analysis/checkpoint_loops.cpp — checkpointable loops and their fingerprints.
#include "analysis/checkpoint_loops.h"

#include <cstdio>

#include "ir/loops.h"
#include "ir/printer.h"

namespace spmd::analysis {

namespace {

uint64_t fnv1a(const std::string &text, uint64_t h = 1469598103934665603ULL) {
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace

std::string checkpoint_mesh(const rt::Mesh &mesh) {
  std::string s = "(";
  for (size_t i = 0; i < mesh.axes().size(); ++i)
    s += (i ? ", " : "") + mesh.axes()[i].name + ": " + std::to_string(mesh.axes()[i].size);
  return s + ")";
}

std::vector<rt::CheckpointLoop> checkpoint_loops(const ir::Module &module, const ir::Function &f) {
  std::vector<rt::CheckpointLoop> loops;
  const std::string mesh = checkpoint_mesh(module.mesh_of(f));
  for (size_t i = 0; i < f.body.size(); ++i) {
    const ir::Instr &loop = f.body[i];
    if (loop.op != OpCode::For) continue;
    rt::CheckpointLoop l;
    const ir::Region &r = loop.regions.at(0);
    l.variable = f.values.at(static_cast<size_t>(r.params.at(0))).name;
    l.start = loop.attrs.loop().start;
    l.step = loop.attrs.loop().step;
    l.trips = ir::trip_count(loop.attrs);
    l.carried = static_cast<int>(loop.results.size());
    // The program without this loop's trip count.
    // (A copy of the module: the printer names functions by their place in it.)
    ir::Module copy = module;
    ir::Function &g = copy.functions.at(static_cast<size_t>(&f - module.functions.data()));
    g.body[i].attrs.loop().stop = l.start;
    ir::PrintOptions options;
    options.types = true;
    options.include_meshes = false;
    const uint64_t h =
        fnv1a(mesh + "\n" + std::to_string(i) + "\n" + ir::print_function(copy, g, options));
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    l.fingerprint = hex;
    loops.push_back(std::move(l));
  }
  return loops;
}

}  // namespace spmd::analysis
