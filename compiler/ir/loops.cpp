// ir/loops.cpp — see loops.h.
#include "ir/loops.h"

#include <algorithm>
#include <unordered_set>

#include "spmdrt/checked.h"

namespace spmd::ir {

int64_t trip_count(int64_t start, int64_t stop, int64_t step) {
  if (step == 0) return 0;
  // In __int128 so that bounds near the int64 limits cannot overflow.
  const __int128 span =
      step > 0 ? static_cast<__int128>(stop) - start : static_cast<__int128>(start) - stop;
  const __int128 s = step > 0 ? step : -static_cast<__int128>(step);
  if (span <= 0) return 0;
  const __int128 n = (span + s - 1) / s;
  return n > INT64_MAX ? INT64_MAX : static_cast<int64_t>(n);
}

namespace {

void collect(const std::vector<Instr> &body, std::unordered_set<ValueId> &defined,
             std::unordered_set<ValueId> &seen, std::vector<ValueId> &out) {
  auto use = [&](ValueId v) {
    if (!defined.count(v) && seen.insert(v).second) out.push_back(v);
  };
  for (const Instr &in : body) {
    for (ValueId o : in.operands) use(o);
    for (const Region &r : in.regions) {
      for (ValueId p : r.params) defined.insert(p);
      collect(r.body, defined, seen, out);
      for (ValueId y : r.yields) use(y);
    }
    for (ValueId r : in.results) defined.insert(r);
  }
}

}  // namespace

std::vector<ValueId> captured_values(const std::vector<Instr> &body,
                                     const std::vector<ValueId> &params,
                                     const std::vector<ValueId> &yields) {
  std::unordered_set<ValueId> defined(params.begin(), params.end()), seen;
  std::vector<ValueId> out;
  collect(body, defined, seen, out);
  for (ValueId y : yields)
    if (!defined.count(y) && seen.insert(y).second) out.push_back(y);
  return out;
}

BlockUses block_uses(const std::vector<Instr> &body, const std::vector<ValueId> &params,
                     const std::vector<ValueId> &kept, const std::vector<int> &position) {
  BlockUses u;
  const int n = static_cast<int>(body.size());
  auto at = [&](int i) { return position.empty() ? i : position[static_cast<size_t>(i)]; };
  for (ValueId v : params) u.last[v] = BlockUses::kUnused;
  for (int i = 0; i < n; ++i)
    for (ValueId r : body[i].results) u.last[r] = BlockUses::kUnused;
  std::vector<std::vector<ValueId>> captured(body.size());
  std::unordered_map<ValueId, int> readers_at_last;  // reads at the last position
  auto read = [&](ValueId v, int p) {
    auto it = u.last.find(v);
    if (it == u.last.end()) return;  // defined outside the block
    if (p > it->second) {
      it->second = p;
      readers_at_last[v] = 1;
    } else if (p == it->second) {
      ++readers_at_last[v];
    }
  };
  for (int i = 0; i < n; ++i) {
    for (ValueId v : body[i].operands) read(v, at(i));
    for (const Region &r : body[i].regions) {
      for (ValueId v : captured_values(r)) captured[i].push_back(v);
      for (ValueId v : captured[i]) read(v, at(i));
    }
  }
  for (ValueId v : kept)
    if (u.last.count(v)) u.last[v] = BlockUses::kKept;
  u.takes_over.resize(body.size());
  for (int i = 0; i < n; ++i) {
    const auto &ops = body[i].operands;
    u.takes_over[i].assign(ops.size(), false);
    for (size_t k = 0; k < ops.size(); ++k) {
      auto it = u.last.find(ops[k]);
      const bool in_region =
          std::find(captured[i].begin(), captured[i].end(), ops[k]) != captured[i].end();
      u.takes_over[i][k] =
          it != u.last.end() && it->second == at(i) && readers_at_last[ops[k]] == 1 && !in_region;
    }
  }
  return u;
}

void replace_uses(std::vector<Instr> &body, std::vector<ValueId> &yields, ValueId from,
                  ValueId to) {
  for (auto &y : yields)
    if (y == from) y = to;
  for (auto &in : body) {
    for (auto &o : in.operands)
      if (o == from) o = to;
    for (auto &r : in.regions) replace_uses(r.body, r.yields, from, to);
  }
}

void remap_uses(std::vector<Instr> &body, std::vector<ValueId> &yields,
                const ValueMap<ValueId> &map) {
  auto get = [&](ValueId &v) {
    if (const ValueId *to = map.find(v)) v = *to;
  };
  for (auto &y : yields) get(y);
  for (auto &in : body) {
    for (auto &o : in.operands) get(o);
    for (auto &r : in.regions) remap_uses(r.body, r.yields, map);
  }
}

namespace {

ValueId renew(Function &f, ValueId v, ValueMap<ValueId> &map) {
  const Value old = f.values[v];
  const ValueId nv = f.add_value(old.type, old.name, old.span);
  map[v] = nv;
  return nv;
}

ValueId read(const ValueMap<ValueId> &map, ValueId v) {
  const ValueId *to = map.find(v);
  return to ? *to : v;
}

}  // namespace

void clone_instr(Function &f, const Instr &in, ValueMap<ValueId> &map, std::vector<Instr> &out) {
  Instr copy;
  copy.op = in.op;
  copy.attrs = in.attrs;
  copy.span = in.span;
  copy.origin = in.origin;
  for (ValueId o : in.operands) copy.operands.push_back(read(map, o));
  for (const Region &r : in.regions) {
    Region nr;
    for (ValueId p : r.params) nr.params.push_back(renew(f, p, map));
    for (const Instr &inner : r.body) clone_instr(f, inner, map, nr.body);
    for (ValueId y : r.yields) nr.yields.push_back(read(map, y));
    copy.regions.push_back(std::move(nr));
  }
  for (ValueId r : in.results) copy.results.push_back(renew(f, r, map));
  out.push_back(std::move(copy));
}

void erase_carry(Instr &loop, size_t k) {
  Region &r = loop.regions.at(0);
  loop.operands.erase(loop.operands.begin() + static_cast<long>(k));
  loop.results.erase(loop.results.begin() + static_cast<long>(k));
  r.params.erase(r.params.begin() + static_cast<long>(k + 1));
  r.yields.erase(r.yields.begin() + static_cast<long>(k));
}

int64_t unrolled_size(const std::vector<Instr> &body,
                      const std::function<bool(const Instr &)> &unrolls,
                      const std::function<int64_t(int)> &call_size) {
  int64_t size = 0;
  for (const Instr &in : body) {
    int64_t n = 1;
    if (in.op == OpCode::For) {
      const int64_t inner = unrolled_size(in.regions.at(0).body, unrolls, call_size);
      n = unrolls(in) ? rt::saturating_mul(trip_count(in.attrs), rt::saturating_add(1, inner))
                      : rt::saturating_add(1, inner);
    } else if (in.op == OpCode::Call && call_size) {
      n = call_size(in.attrs.call().callee);
    }
    size = rt::saturating_add(size, n);
  }
  return size;
}

bool has_loop(const std::vector<Instr> &body) {
  for (const Instr &in : body)
    if (in.op == OpCode::For) return true;
  return false;
}

bool has_effect(const Instr &in) {
  if (op_has_effect(in.op)) return true;
  for (const Region &r : in.regions)
    for (const Instr &inner : r.body)
      if (has_effect(inner)) return true;
  return false;
}

}  // namespace spmd::ir
