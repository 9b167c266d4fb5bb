// backend/emit_common.cpp — naming, literals, source comments, per-element code, loop nests.
//
// The one switch from elementwise OpCodes to scalar-op calls lives here
// (element_statements), shared by both targets so a fused CPU loop and a fused
// CUDA kernel compute the same expression per element.
#include "backend/emit_common.h"

// A missing case is an error for this file whatever the build flags.
#pragma GCC diagnostic error "-Wswitch"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "analysis/checkpoint_loops.h"
#include "analysis/memory_estimate.h"
#include "ir/loops.h"
#include "ir/parallel_copy.h"
#include "spmdrt/tensor.h"

namespace spmd::backend {
namespace {

const std::set<std::string> kReserved = {
    "ctx",       "args",     "rt",       "sc",      "cu",        "std",     "main",
    "int",       "float",    "double",   "bool",    "char",      "long",    "short",
    "auto",      "const",    "return",   "if",      "else",      "for",     "while",
    "do",        "new",      "delete",   "class",   "struct",    "union",   "enum",
    "namespace", "template", "typename", "this",    "true",      "false",   "and",
    "or",        "not",      "xor",      "default", "case",      "switch",  "break",
    "continue",  "register", "static",   "extern",  "volatile",  "signed",  "unsigned",
    "void",      "operator", "private",  "public",  "protected", "friend",  "virtual",
    "inline",    "goto",     "sizeof",   "try",     "catch",     "throw",   "using",
    "export",    "module",   "import",   "concept", "requires",  "Tensor",  "DType",
    "Shape",     "I64s",     "Axes",     "n",       "idx",       "stride",  "i0",
    "i1",        "i2",       "i3",       "i4",      "i5",        "i6",      "i7",
    "i8",        "i9",       "max",      "min",     "abs",       "exp",     "log",
    "sin",       "cos",      "tanh",     "sqrt",    "pow",       "select",  "assert",
    "errno",     "stdin",    "stdout",   "stderr",  "NULL",      "nullptr", "blockIdx",
    "threadIdx", "blockDim", "gridDim",  "dim3",    "flat",      "rank",    "stream",
    "status"};

std::string hexfloat(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

}  // namespace

std::string sanitize(const std::string &text) {
  std::string s;
  for (char c : text) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "v" + s;
  if (s.rfind("__", 0) == 0) s = "v" + s;
  return s;
}

Names::Names(const ir::Function &f) {
  for (const std::string &word : kReserved) used_.reserve(word);
  names_.resize(f.values.size());
  // Parameters first so they keep their source names.
  std::vector<bool> is_param(f.values.size(), false);
  for (const ir::Param &p : f.params) {
    names_[p.value] = fresh(f.values[p.value].name.empty() ? "arg" : f.values[p.value].name);
    is_param[p.value] = true;
  }
  for (size_t v = 0; v < f.values.size(); ++v)
    if (!is_param[v]) names_[v] = fresh(f.values[v].name.empty() ? "t" : f.values[v].name);
}

std::string Names::fresh(const std::string &hint) { return used_.claim(sanitize(hint)); }

const char *storage_type(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return "float";
    case DType::F64:
      return "double";
    case DType::BF16:
      return "uint16_t";
    case DType::I32:
      return "int32_t";
    case DType::Bool:
      return "bool";
    case DType::Key:  // never in a fused kernel: keys are moved, not computed with
      return "uint64_t";
  }
  return "void";
}

const char *compute_type(DType dtype) {
  return dtype == DType::BF16 ? "float" : storage_type(dtype);
}

std::string dtype_enum(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return "rt::DType::F32";
    case DType::F64:
      return "rt::DType::F64";
    case DType::BF16:
      return "rt::DType::BF16";
    case DType::I32:
      return "rt::DType::I32";
    case DType::Bool:
      return "rt::DType::Bool";
    case DType::Key:
      return "rt::DType::Key";
  }
  return "?";
}

std::string compute_literal(DType dtype, double value) {
  // Convert exactly as Tensor::scalar does, then print the stored value exactly.
  rt::Tensor t = rt::Tensor::scalar(dtype, value);
  const double v = t.get(0);
  switch (dtype) {
    case DType::Bool:
      return v != 0 ? "true" : "false";
    case DType::I32: {
      const auto i = static_cast<int32_t>(v);
      if (i == INT32_MIN) return "int32_t(-2147483647 - 1)";
      return "int32_t(" + std::to_string(i) + ")";
    }
    case DType::Key:  // keys have no literals (key(seed) makes them)
      break;
    case DType::F32:
    case DType::BF16:
    case DType::F64: {
      const bool f = dtype != DType::F64;
      const char *ty = f ? "float" : "double";
      if (std::isnan(v)) {
        if (f) {
          float x = t.dtype() == DType::F32 ? t.data<float>()[0] : static_cast<float>(v);
          uint32_t bits;
          std::memcpy(&bits, &x, 4);
          char buf[32];
          std::snprintf(buf, sizeof buf, "0x%08xu", bits);
          return std::string("std::bit_cast<float>(") + buf + ")";
        }
        return std::string(std::signbit(v) ? "-" : "") + "std::numeric_limits<double>::quiet_NaN()";
      }
      if (std::isinf(v))
        return std::string(v < 0 ? "-" : "") + "std::numeric_limits<" + ty + ">::infinity()";
      std::string lit = hexfloat(v) + (f ? "f" : "");
      if (v < 0) lit = "(" + lit + ")";
      return lit;
    }
  }
  return "0";
}

std::string double_literal(double value) {
  if (std::isnan(value)) return "std::numeric_limits<double>::quiet_NaN()";
  if (std::isinf(value))
    return value < 0 ? "-std::numeric_limits<double>::infinity()"
                     : "std::numeric_limits<double>::infinity()";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", value);
  return hexfloat(value) + " /* " + buf + " */";
}

std::string shape_init(const Shape &shape) { return int_list(shape); }

std::string int_list(const std::vector<int64_t> &list) {
  std::string s = "{";
  for (size_t i = 0; i < list.size(); ++i) s += (i ? ", " : "") + std::to_string(list[i]);
  return s + "}";
}

std::string int_list(const std::vector<int> &list) {
  return int_list(std::vector<int64_t>(list.begin(), list.end()));
}

std::string cpp_comment(std::string_view text, std::string_view indent) {
  std::string out(indent);
  out += "//";
  if (!text.empty()) out += ' ';
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    out += u < 0x20 || u == 0x7f ? '?' : c;
  }
  // GCC splices a line ending in a backslash, even with blanks after it.
  const size_t last = out.find_last_not_of(" \t");
  if (last != std::string::npos && out[last] == '\\') out += " //";
  return out + "\n";
}

std::string cpp_string_literal(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u >= 0x7f) {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\%03o", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string pair_list(const std::vector<std::pair<int64_t, int64_t>> &pairs) {
  std::string s = "{";
  for (size_t k = 0; k < pairs.size(); ++k)
    s += (k ? ", {" : "{") + std::to_string(pairs[k].first) + ", " +
         std::to_string(pairs[k].second) + "}";
  return s + "}";
}

std::string source_line(const SourceManager *sources, SourceSpan span) {
  if (!sources || !span.valid()) return "";
  SourceLocation loc = sources->location(span);
  std::string text(sources->file(span.file).line_text(loc.line));
  size_t b = text.find_first_not_of(" \t");
  text = b == std::string::npos ? "" : text.substr(b);
  if (text.size() > 90) text = text.substr(0, 87) + "...";
  std::string file(loc.path);
  auto slash = file.rfind('/');
  if (slash != std::string::npos) file = file.substr(slash + 1);
  return file + ":" + std::to_string(loc.line) + ": " + text;
}

std::string load_expr(DType dtype, const std::string &element) {
  if (dtype == DType::BF16) return "sc::bf16_load(" + element + ")";
  return element;
}

std::string store_expr(DType dtype, const std::string &value) {
  if (dtype == DType::BF16) return "sc::bf16_store(" + value + ")";
  return value;
}

std::vector<std::string> element_statements(const ir::Function &f, const FusionPlan &plan,
                                            const FusedGroup &group, const Names &names,
                                            const std::map<ir::ValueId, std::string> &input_expr,
                                            const std::string &elem_suffix) {
  const std::vector<ir::Instr> &body = *plan.body;
  auto operand = [&](ir::ValueId v) -> std::string {
    if (auto it = input_expr.find(v); it != input_expr.end()) return it->second;
    if (auto it = plan.constant_def.find(v); it != plan.constant_def.end())
      return compute_literal(it->second->attrs.creation().dtype,
                             it->second->attrs.creation().value);
    return names[v] + elem_suffix;
  };
  std::vector<std::string> out;
  for (size_t i : group.members) {
    const ir::Instr &in = body[i];
    const ir::ValueId r = in.results[0];
    const DType rd = f.type(r).dtype;
    std::vector<std::string> x;
    for (ir::ValueId v : in.operands) x.push_back(operand(v));
    std::string fn;
    bool rounds = rd == DType::BF16;  // arithmetic producing bf16 rounds once per op
    std::string expr;
    switch (in.op) {
#define UNARY_MATH(Name, spelling, kernel, scalar_fn, Domain, Linearity) \
  case OpCode::Name:                                                     \
    fn = "sc::" #scalar_fn;                                              \
    break;
#include "spmdrt/unary_math.def"
      case OpCode::StopGradient:  // the identity when running
        expr = x[0];
        rounds = false;
        break;
      case OpCode::Cast: {
        const DType from = f.type(in.operands[0]).dtype;
        if (from == rd)
          expr = x[0];
        else if (rd == DType::BF16)
          expr = "sc::to_bf16(" + x[0] + ")";
        else
          expr = std::string("sc::convert<") + compute_type(rd) + ">(" + x[0] + ")";
        rounds = false;
        break;
      }
#define BINARY_MATH(Name, spelling, kernel, scalar_fn, Kind, symbol, BoolOk, Linearity) \
  case OpCode::Name:                                                                    \
    fn = "sc::" #scalar_fn;                                                             \
    break;
#include "spmdrt/binary_math.def"
      case OpCode::Select:
        fn = "sc::select";
        rounds = false;  // picks one of two bf16 values: nothing to round
        break;
      case OpCode::Constant:
      case OpCode::Full:
      case OpCode::Iota:
      case OpCode::ReduceSum:
      case OpCode::ReduceMax:
      case OpCode::ReduceMin:
      case OpCode::ArgMax:
      case OpCode::ArgMin:
      case OpCode::Einsum:
      case OpCode::Reshape:
      case OpCode::Constrain:
      case OpCode::Transpose:
      case OpCode::Reverse:
      case OpCode::BroadcastTo:
      case OpCode::Slice:
      case OpCode::Pad:
      case OpCode::Concat:
      case OpCode::DynamicSlice:
      case OpCode::DynamicUpdateSlice:
      case OpCode::Take:
      case OpCode::ScatterAdd:
      case OpCode::Psum:
      case OpCode::Pmax:
      case OpCode::Pmin:
      case OpCode::Pbroadcast:
      case OpCode::AllGather:
      case OpCode::AllGatherInvariant:
      case OpCode::PsumScatter:
      case OpCode::Pscatter:
      case OpCode::AllToAll:
      case OpCode::Ppermute:
      case OpCode::AxisIndex:
      case OpCode::RandomKey:
      case OpCode::RandomFoldIn:
      case OpCode::KeyData:
      case OpCode::RandomSplit:
      case OpCode::RandomBits:
      case OpCode::RandomUniform:
      case OpCode::RandomNormal:
      case OpCode::RandomInt:
      case OpCode::For:
      case OpCode::Call:
      case OpCode::DebugPrint:
        throw std::logic_error("backend: `" + std::string(op_spelling(in.op)) +
                               "` is not an elementwise op");
    }
    if (expr.empty()) {
      expr = fn + "(";
      for (size_t k = 0; k < x.size(); ++k) expr += (k ? ", " : "") + x[k];
      expr += ")";
      if (rounds) expr = "sc::bf16_round(" + expr + ")";
    }
    out.push_back(std::string("const ") + compute_type(rd) + " " + names[r] + elem_suffix + " = " +
                  expr + ";  // " + std::string(op_spelling(in.op)));
  }
  return out;
}

LoopNest make_loop_nest(const Shape &shape, const std::vector<Shape> &input_shapes) {
  const size_t rank = shape.size();
  std::vector<std::vector<int64_t>> full(1 + input_shapes.size(), std::vector<int64_t>(rank, 0));
  int64_t s = 1;
  for (size_t d = rank; d-- > 0;) {
    full[0][d] = s;
    s *= shape[d];
  }
  for (size_t k = 0; k < input_shapes.size(); ++k) {
    const Shape &in = input_shapes[k];
    const size_t lead = rank - in.size();
    int64_t st = 1;
    for (size_t j = in.size(); j-- > 0;) {
      full[k + 1][lead + j] = (in[j] == 1 && shape[lead + j] != 1) ? 0 : st;
      st *= in[j];
    }
  }
  LoopNest nest;
  nest.strides.resize(full.size());
  nest.numel = rt::num_elements(shape);
  for (size_t d = 0; d < rank; ++d) {
    if (shape[d] == 1) continue;
    bool merge = !nest.extent.empty();
    for (size_t k = 0; k < full.size() && merge; ++k)
      merge = nest.strides[k].back() == full[k][d] * shape[d];
    if (merge) {
      nest.extent.back() *= shape[d];
      for (size_t k = 0; k < full.size(); ++k) nest.strides[k].back() = full[k][d];
    } else {
      nest.extent.push_back(shape[d]);
      for (size_t k = 0; k < full.size(); ++k) nest.strides[k].push_back(full[k][d]);
    }
  }
  return nest;
}

std::string offset_expr(const LoopNest &nest, size_t operand, const std::vector<std::string> &idx) {
  std::string s;
  for (size_t d = 0; d < nest.extent.size(); ++d) {
    const int64_t st = nest.strides[operand][d];
    if (st == 0) continue;
    if (!s.empty()) s += " + ";
    s += st == 1 ? idx[d] : idx[d] + " * " + std::to_string(st);
  }
  return s.empty() ? "0" : s;
}

std::string collective_expr(const ir::Function &f, const ir::Instr &in, Names &names, bool movable,
                            std::string &pre) {
  const Attrs &a = in.attrs;
  std::string call, tail = ", Axes" + int_list(a.collective().axes);
  if (in.op == OpCode::AllGather || in.op == OpCode::AllGatherInvariant ||
      in.op == OpCode::PsumScatter) {
    call = in.op == OpCode::PsumScatter ? "ctx.reduce_scatter(" : "ctx.all_gather(";
    tail += ", " + std::to_string(a.collective().dim) + ", " +
            (a.collective().tiled ? "true" : "false") + ")";
  } else {
    const char *op = in.op == OpCode::Pmax ? "Max" : in.op == OpCode::Pmin ? "Min" : "Sum";
    call = "ctx.all_reduce(";
    tail += ", rt::ReduceOp::" + std::string(op) + ")";
  }
  if (in.operands.size() == 1) return call + names[in.operands[0]] + tail;
  const std::string all = names.fresh("combined");
  pre += "  " + std::string(movable ? "" : "const ") + "std::vector<Tensor> " + all + " = " + call +
         "std::vector<Tensor>{";
  for (size_t k = 0; k < in.operands.size(); ++k) pre += (k ? ", " : "") + names[in.operands[k]];
  pre += "}" + tail + ";  // one combined " + std::string(op_spelling(in.op)) + "\n";
  for (size_t k = 1; k < in.results.size(); ++k)
    pre +=
        "  " + std::string(movable ? "Tensor " : "const Tensor ") + names[in.results[k]] + " = " +
        (movable ? "std::move(" + all + "[" + std::to_string(k) + "])"
                 : all + "[" + std::to_string(k) + "]") +
        ";  // " + shape_type_str(f.type(in.results[k]).dtype, f.type(in.results[k]).shape) + "\n";
  return movable ? "std::move(" + all + "[0])" : all + "[0]";
}

std::string group_title(const FusionPlan &plan, const FusedGroup &group) {
  std::vector<std::string> ops;
  for (size_t i : group.members) {
    std::string op(op_spelling((*plan.body)[i].op));
    if (ops.empty() || ops.back() != op) ops.push_back(op);
  }
  std::string s;
  for (size_t k = 0; k < ops.size() && k < 4; ++k) s += (k ? "_" : "") + sanitize(ops[k]);
  if (ops.size() > 4) s += "_etc";
  return s;
}

LoopCode loop_code(const ir::Function &f, const ir::Instr &loop, Names &names,
                   const std::string &index_tensor, const std::string &indent,
                   const std::string &checkpoint_site) {
  const ir::Region &r = loop.regions.at(0);
  LoopCode code;
  // The carried variables, named after the results; the parameters alias them.
  for (size_t k = 0; k < loop.results.size(); ++k) {
    names.alias(r.params[k + 1], loop.results[k]);
    code.before += indent + "Tensor " + names[loop.results[k]] + " = " + names[loop.operands[k]] +
                   ";  // carried\n";
  }
  const std::string counter = names.fresh(names[r.params[0]] + "_i");
  const Attrs &a = loop.attrs;
  std::string start = std::to_string(a.loop().start);
  std::string carried_list;  // {&c0, &c1, ...}
  for (size_t k = 0; k < loop.results.size(); ++k)
    carried_list += (k ? ", &" : "&") + names[loop.results[k]];
  if (!checkpoint_site.empty()) {
    const std::string first = names.fresh(names[r.params[0]] + "_done");
    code.before += indent + "const int64_t " + first + " = " + checkpoint_site + ".begin({" +
                   carried_list + "});  // iterations done (--resume)\n";
    start += " + " + first + " * " + std::to_string(a.loop().step);
  }
  code.before += indent + "for (int64_t " + counter + " = " + start + "; " + counter +
                 (a.loop().step > 0 ? " < " : " > ") + std::to_string(a.loop().stop) + "; " +
                 counter + " += " + std::to_string(a.loop().step) + ") {  // " +
                 std::to_string(ir::trip_count(a)) +
                 (ir::trip_count(a) == 1 ? " iteration\n" : " iterations\n");
  const std::vector<ir::ValueId> reads = ir::captured_values(r.body, {}, r.yields);
  const bool index_used = std::find(reads.begin(), reads.end(), r.params[0]) != reads.end();
  if (index_used) {
    std::string expr = index_tensor;
    expr.replace(expr.find("%s"), 2, counter);
    code.index = indent + "  const Tensor " + names[r.params[0]] + " = " + expr + ";\n";
  }
  // The next values: a parallel copy into the carried variables.
  std::unordered_map<ir::ValueId, ir::ValueId> carried_of;  // parameter -> result
  for (size_t k = 0; k < loop.results.size(); ++k) carried_of[r.params[k + 1]] = loop.results[k];
  std::vector<ir::Copy<ir::ValueId>> copies;
  for (size_t k = 0; k < r.yields.size(); ++k) {
    auto c = carried_of.find(r.yields[k]);
    copies.push_back({loop.results[k], c == carried_of.end() ? r.yields[k] : c->second});
  }
  ir::ValueId next_temporary = ir::kNoValue;
  std::unordered_map<ir::ValueId, std::string> temporaries;
  auto name = [&](ir::ValueId v) -> std::string {
    if (v >= 0) return names[v];
    auto t = temporaries.find(v);
    if (t == temporaries.end()) t = temporaries.emplace(v, names.fresh("swap")).first;
    return t->second;
  };
  for (const auto &c :
       ir::sequentialize_parallel_copy<ir::ValueId>(copies, [&] { return --next_temporary; })) {
    const bool declare = c.destination < 0;
    code.next += indent + "  " + (declare ? "const Tensor " : "") + name(c.destination) + " = " +
                 name(c.source) + ";\n";
  }
  if (!checkpoint_site.empty())
    code.next += indent + "  " + checkpoint_site + ".after((" + counter + " - " +
                 std::to_string(a.loop().start) + ") / " + std::to_string(a.loop().step) +
                 " + 1, {" + carried_list + "});\n";
  code.after = indent + "}\n";
  return code;
}

std::string indent_lines(const std::string &text, const std::string &indent) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) out += indent;
    out.append(text, start, end - start);
    out += '\n';
    start = end + 1;
  }
  return out;
}

namespace {
std::string spec_init(const rt::PartitionSpec &spec) {
  std::string s = "rt::PartitionSpec{";
  for (size_t d = 0; d < spec.size(); ++d) s += (d ? ", " : "") + int_list(spec[d]);
  return s + "}";
}
}  // namespace

std::string program_main_call(const EmitOptions &options, const std::string &target,
                              const std::string &threads_executor,
                              const std::string &mpi_executor) {
  return "  return rt::program_main(argc, argv, functions(), " + cpp_string_literal(options.entry) +
         ", " + cpp_string_literal(target) + ",\n                          " +
         cpp_string_literal(options.built_by + " from " + options.source_path) +
         ",\n                          {" + threads_executor + "(functions(), bodies),\n" +
         "                           " + mpi_executor + "(functions(), bodies)});\n}\n";
}

std::string program_function_init(const ir::Module &module, const ir::Function &f,
                                  const std::string &source_path, const SourceManager *sources,
                                  bool checkpoints) {
  const rt::Mesh &mesh = module.mesh_of(f);
  std::string s = "rt::ProgramFunction{\n      " + cpp_string_literal(f.name) + ", " +
                  cpp_string_literal(source_path) + ",\n      rt::Mesh({";
  for (size_t a = 0; a < mesh.axes().size(); ++a)
    s += (a ? ", " : "") + std::string("{") + cpp_string_literal(mesh.axes()[a].name) + ", " +
         std::to_string(mesh.axes()[a].size) + "}";
  s += "}),\n      {";
  for (size_t k = 0; k < f.params.size(); ++k) {
    const ir::Param &p = f.params[k];
    std::string name =
        f.values[p.value].name.empty() ? "arg" + std::to_string(k) : f.values[p.value].name;
    std::string size_names;
    for (size_t d = 0; d < p.size_names.size(); ++d)
      size_names += (d ? ", " : "") + cpp_string_literal(p.size_names[d]);
    s += std::string(k ? ",\n       " : "") + "{" + cpp_string_literal(name) + ", " +
         dtype_enum(f.type(p.value).dtype) + ", " + shape_init(p.global_shape) + ", " +
         spec_init(p.spec) + ", {" + size_names + "}}";
  }
  s += "},\n      {";
  for (size_t k = 0; k < f.results.size(); ++k) {
    const ir::Result &r = f.results[k];
    s += std::string(k ? ",\n       " : "") + "{" + cpp_string_literal(ir::result_name(f, k)) +
         ", " + dtype_enum(f.type(f.returns[k]).dtype) + ", " + shape_init(r.global_shape) + ", " +
         spec_init(r.spec) + "}";
  }
  const rt::MemoryEstimate memory = estimate_memory(module, f, sources);
  s += "},\n      rt::MemoryEstimate{" + std::to_string(memory.device_bytes) + ", " +
       cpp_string_literal(memory.largest) + ", " + std::to_string(memory.largest_bytes) + "}";
  // The loops --checkpoint-dir can save, fingerprinted as the prepared
  // function (a module holding it in the place of the checked one).
  if (checkpoints) {
    ir::Module prepared = module;
    const int index = module.find_function(f.name);
    if (index >= 0) {
      prepared.functions[static_cast<size_t>(index)] = f;
      s += ",\n      {";
      bool first = true;
      for (const rt::CheckpointLoop &l :
           analysis::checkpoint_loops(prepared, prepared.functions[static_cast<size_t>(index)])) {
        s += std::string(first ? "" : ", ") + "{" + cpp_string_literal(l.variable) + ", " +
             cpp_string_literal(l.fingerprint) + ", " + std::to_string(l.start) + ", " +
             std::to_string(l.step) + ", " + std::to_string(l.trips) + ", " +
             std::to_string(l.carried) + "}";
        first = false;
      }
      s += "}";
    }
  }
  return s + "}";
}

}  // namespace spmd::backend
