// python/spmdc_module.cpp — the `spmdc._spmdc` extension module: pybind11
// bindings over the compiler library, for the Python package (python/spmdc/).
//
// Each binding calls the library functions the CLI's commands call
// (compiler/driver/cmd_*.cpp): compile_source (the check script), derive (the
// derive script), sharding::shard, interp::run_shmap, estimate_cost,
// describe_shmap/picture_svg, backend::emit_program and the toolchain. No
// compiler logic lives here: only the translation between Python values and
// the library's types. Diagnostics come back as the same two renderings the
// CLI prints (text, and JSON Lines as `--diagnostics-format=json`), and the
// Python layer raises spmdc.CompileError with them.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <stdexcept>

#include "analysis/cost.h"
#include "analysis/picture.h"
#include "analysis/profile_file.h"
#include "backend/backend.h"
#include "backend/toolchain.h"
#include "interp/interpreter.h"
#include "ir/printer.h"
#include "pipeline/compile.h"
#include "pipeline/derive.h"
#include "sharding/shard.h"
#include "spmdrt/output_file.h"
#include "spmdrt/tensor.h"
#include "transforms/derived_signature.h"

namespace py = pybind11;

namespace spmd::python {
namespace {

/// A problem reported as diagnostics: the CLI's text and JSON Lines renderings.
struct Reported {
  std::string text, json;
};

Reported render(const DiagnosticEngine &diags, const SourceManager &sources) {
  return {render_diagnostics(diags, sources, DiagnosticsFormat::Text, false),
          render_diagnostics(diags, sources, DiagnosticsFormat::Json, false)};
}

/// Raised to Python as spmdc._spmdc.DiagnosticsError(text, json).
struct DiagnosticsError {
  Reported reported;
};

/// One error at `span`, rendered like the driver's report_transform_error.
[[noreturn]] void throw_error(const std::string &code, SourceSpan span, const std::string &message,
                              const SourceManager &sources) {
  DiagnosticEngine diags;
  diags.error(code, span, message);
  throw DiagnosticsError{render(diags, sources)};
}

/// A compiled program: the Compilation of the check script (pipeline/compile.h).
class Program {
 public:
  Program(std::string path, std::unique_ptr<Compilation> c)
      : path_(std::move(path)), c_(std::move(c)) {}

  const ir::Module &module() const { return *c_->module; }

  /// The source text `spmdc print [--types]` prints.
  std::string print(bool types) const {
    ir::PrintOptions po;
    po.types = types;
    return ir::print_module(c_->printable(), po);
  }

  /// (name, kind, entry) of every top-level function.
  std::vector<std::tuple<std::string, std::string, bool>> functions() const {
    std::vector<std::tuple<std::string, std::string, bool>> out;
    for (const ir::Function &f : module().functions)
      if (ir::is_top_level(f))
        out.emplace_back(f.name, f.kind == ir::FunctionKind::Sharded ? "sharded" : "shmap",
                         f.entry);
    return out;
  }

  /// `spmdc transpose|jvp|vjp|grad`: the derived program's source.
  std::string derive(const std::string &kind, const std::string &fn,
                     const std::vector<std::string> &wrt, const std::vector<std::string> &of,
                     bool remat, bool types) const {
    DeriveRequest request;
    request.kind = kind == "transpose" ? DeriveKind::Transpose
                   : kind == "jvp"     ? DeriveKind::Jvp
                   : kind == "vjp"     ? DeriveKind::Vjp
                                       : DeriveKind::Grad;
    request.function = fn;
    request.wrt = wrt;
    request.of = of;
    request.source_path = path_;
    request.remat = remat;
    try {
      ir::Module derived = spmd::derive(module(), request);
      ir::PrintOptions po;
      po.types = types;
      return ir::print_module(derived, po);
    } catch (const TransformError &e) {
      throw_error(e.code, e.span, e.what(), c_->sources);
    }
  }

  /// `spmdc shard [--auto]`: the emitted shmap program's source and the
  /// search's note (empty when it was optimal or not run).
  std::pair<std::string, std::string> shard(const std::string &fn, bool automatic,
                                            std::optional<double> memory_per_device,
                                            double time_limit_s, double gap_percent, bool strict,
                                            const std::string &profile, bool types) const {
    std::string error;
    std::optional<HardwareProfile> hw = resolve_profile(profile, error);
    if (!hw) throw py::value_error(error);
    sharding::ShardOptions so;
    so.function = fn;
    so.automatic = automatic;
    so.strict = strict;
    so.search.memory_per_device = memory_per_device;
    so.search.time_limit_s = time_limit_s;
    so.search.gap = gap_percent / 100;
    so.profile = *hw;
    so.source_path = path_;
    so.sources = &c_->sources;
    DiagnosticEngine diags;
    std::optional<sharding::ShardResult> r = sharding::shard(module(), so, diags);
    if (!r) throw DiagnosticsError{render(diags, c_->sources)};
    ir::PrintOptions po;
    po.types = types;
    std::string note;
    if (r->search && !r->search->optimal) note = "sharding search " + r->search->status;
    return {ir::print_module(r->module, po), note};
  }

  /// The index of the function `fn` runs (the only entry when empty), as
  /// `spmdc run --fn` chooses it.
  int choose(const std::string &fn) const {
    const ir::Module &m = module();
    std::vector<int> entries;
    for (size_t i = 0; i < m.functions.size(); ++i)
      if (ir::is_top_level(m.functions[i]) && m.functions[i].entry)
        entries.push_back(static_cast<int>(i));
    if (fn.empty()) {
      if (entries.size() == 1) return entries[0];
      std::string names;
      for (int i : entries) names += (names.empty() ? "`" : ", `") + m.functions[i].name + "`";
      throw py::value_error(entries.empty() ? "the program defines no shmap to run"
                                            : "the program defines several functions (" + names +
                                                  "); name one: prog.run(\"NAME\", ...)");
    }
    const int index = m.find_function(fn);
    if (index < 0 || !ir::is_top_level(m.functions[static_cast<size_t>(index)]))
      throw py::value_error("the program has no shmap or sharded function named `" + fn + "`");
    return index;
  }

  /// The function's name, parameters (name, dtype, global shape) and result names.
  py::dict signature(const std::string &fn) const {
    const ir::Function &f = module().functions[static_cast<size_t>(choose(fn))];
    py::list params, results;
    for (size_t k = 0; k < f.params.size(); ++k)
      params.append(py::make_tuple(ir::param_name(f, k),
                                   rt::dtype_name(f.type(f.params[k].value).dtype),
                                   py::tuple(py::cast(f.params[k].global_shape))));
    for (size_t k = 0; k < f.results.size(); ++k) results.append(ir::result_name(f, k));
    py::dict d;
    d["name"] = f.name;
    d["kind"] = f.kind == ir::FunctionKind::Sharded ? "sharded" : "shmap";
    d["params"] = params;
    d["results"] = results;
    d["devices"] = module().mesh_of(f).num_devices();
    return d;
  }

  /// `spmdc run`: the function on the simulated mesh; arrays in, arrays out.
  std::vector<py::array> run(const std::string &fn, const std::vector<py::array> &arrays,
                             bool check_replication) const {
    const int index = choose(fn);
    const ir::Function &f = module().functions[static_cast<size_t>(index)];
    if (arrays.size() != f.params.size())
      throw py::type_error("`" + f.name + "` takes " + std::to_string(f.params.size()) +
                           " arrays, not " + std::to_string(arrays.size()));
    std::vector<rt::Tensor> inputs;
    for (size_t k = 0; k < arrays.size(); ++k) inputs.push_back(to_tensor(f, k, arrays[k]));
    interp::InterpOptions io;
    io.check_replication = check_replication;
    std::vector<rt::Tensor> results;
    {
      py::gil_scoped_release release;
      try {
        results = interp::run_shmap(module(), index, inputs, io);
      } catch (const interp::ReplicationError &e) {
        DiagnosticEngine diags;
        diags.internal(e.span(), e.what());
        throw DiagnosticsError{render(diags, c_->sources)};
      } catch (const interp::InputError &e) {
        throw std::invalid_argument(e.what());
      } catch (const interp::RunError &e) {
        const rt::Mesh &mesh = module().mesh_of(f);
        const bool global_view = f.kind == ir::FunctionKind::Sharded;
        throw_error("run-error", e.span(),
                    "while running `" + f.name + "`" +
                        (global_view || mesh.num_devices() == 1
                             ? std::string()
                             : " on device " + std::to_string(e.device()) + " " +
                                   rt::format_position(mesh, e.device())) +
                        ": " + e.what(),
                    c_->sources);
      }
    }
    std::vector<py::array> out;
    for (rt::Tensor &t : results) out.push_back(to_array(std::move(t)));
    return out;
  }

  /// `spmdc cost --json` of one function (and its gradient with `grad`).
  std::string cost(const std::string &fn, bool grad, const std::vector<std::string> &wrt,
                   const std::string &profile) const {
    std::string error;
    std::optional<HardwareProfile> hw = resolve_profile(profile, error);
    if (!hw) throw py::value_error(error);
    try {
      const ir::Function &f = module().functions[static_cast<size_t>(find_shmap(module(), fn))];
      std::string json = "[" + cost_json(estimate_cost(module(), f, *hw));
      if (grad) {
        const bool scalar = !f.returns.empty() && f.type(f.returns[0]).rank() == 0;
        DeriveRequest request;
        request.kind = scalar ? DeriveKind::Grad : DeriveKind::Vjp;
        request.function = f.name;
        request.wrt = wrt;
        request.source_path = path_;
        ir::Module derived = spmd::derive(module(), request);
        const ir::Function &g = derived.functions[static_cast<size_t>(find_shmap(derived, ""))];
        json += ", " + cost_json(estimate_cost(derived, g, *hw));
      }
      return json + "]";
    } catch (const TransformError &e) {
      throw_error(e.code, e.span, e.what(), c_->sources);
    }
  }

  /// `spmdc show [--fn F] [--format svg]`.
  std::string show(const std::string &fn, const std::string &format) const {
    std::vector<ShownShmap> shown;
    try {
      if (!fn.empty()) {
        shown.push_back(describe_shmap(
            module(), module().functions[static_cast<size_t>(find_shmap(module(), fn))],
            c_->sources));
      } else {
        for (const ir::Function &f : module().functions)
          if (f.kind == ir::FunctionKind::Shmap)
            shown.push_back(describe_shmap(module(), f, c_->sources));
      }
    } catch (const TransformError &e) {
      throw_error(e.code, e.span, e.what(), c_->sources);
    }
    if (shown.empty()) throw py::value_error("the program has no shmap to show");
    return format == "svg" ? picture_svg(shown) : picture_text(shown);
  }

  /// `spmdc build --target cpu -o output`: the emitted C++ (written to
  /// `source_out`) compiled against the runtime the toolchain finds
  /// (backend/toolchain.h); returns the compile command's words.
  std::vector<std::string> build(const std::string &fn, const std::string &source_out,
                                 const std::string &output,
                                 const std::vector<std::string> &cxxflags) const {
    backend::EmitOptions eo;
    try {
      eo.entry = module().functions[static_cast<size_t>(find_shmap(module(), fn))].name;
    } catch (const TransformError &e) {
      throw_error(e.code, e.span, e.what(), c_->sources);
    }
    eo.target = backend::Target::Cpu;
    eo.source_path = path_;
    eo.built_by = std::string("spmdc ") + SPMDC_VERSION + " (Python package)";
    const std::string source = backend::emit_program(module(), &c_->sources, eo);
    rt::write_output_file(source_out, {source});
    std::string error;
    auto tc = backend::find_toolchain(error);
    if (!tc) throw std::runtime_error(error);
    std::vector<std::string> cmd =
        backend::compile_command(*tc, backend::Target::Cpu, source_out, output, cxxflags);
    int rc;
    {
      py::gil_scoped_release release;
      rc = backend::run_process(cmd, error);
    }
    if (rc != 0)
      throw std::runtime_error(rc < 0 ? error
                                      : "the C++ compiler failed (exit status " +
                                            std::to_string(rc) + ") on `" + source_out + "`");
    return cmd;
  }

 private:
  /// A NumPy array as parameter k's tensor (the Python layer has already
  /// converted it to the parameter's dtype, C-contiguous; bf16 comes as f32).
  rt::Tensor to_tensor(const ir::Function &f, size_t k, const py::array &a) const {
    const rt::DType dtype = f.type(f.params[k].value).dtype;
    rt::Shape shape(a.shape(), a.shape() + a.ndim());
    const std::string problem =
        interp::check_input(module(), f, k, dtype, shape, "the given array");
    if (!problem.empty()) throw std::invalid_argument(problem);
    rt::Tensor t = rt::Tensor::empty(dtype, shape);
    if (dtype == rt::DType::BF16) {
      const float *src = static_cast<const float *>(a.data());
      for (int64_t i = 0; i < t.numel(); ++i) t.set(i, src[i]);
    } else {
      if (static_cast<size_t>(a.nbytes()) != t.nbytes())
        throw std::invalid_argument("argument `" + ir::param_name(f, k) + "` has the wrong dtype");
      std::memcpy(t.raw(), a.data(), t.nbytes());
    }
    return t;
  }

  /// A result tensor as a NumPy array sharing its buffer (bf16 becomes f32).
  static py::array to_array(rt::Tensor t) {
    std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
    py::dtype dt;
    switch (t.dtype()) {
      case rt::DType::F32:
        dt = py::dtype::of<float>();
        break;
      case rt::DType::F64:
        dt = py::dtype::of<double>();
        break;
      case rt::DType::I32:
        dt = py::dtype::of<int32_t>();
        break;
      case rt::DType::Bool:
        dt = py::dtype::of<bool>();
        break;
      case rt::DType::Key:  // the two words as one uint64 (as .npy files hold keys)
        dt = py::dtype::of<uint64_t>();
        break;
      case rt::DType::BF16: {
        py::array_t<float> out(shape);
        float *dst = out.mutable_data();
        for (int64_t i = 0; i < t.numel(); ++i) dst[i] = static_cast<float>(t.get(i));
        return out;
      }
    }
    auto *owner = new rt::Tensor(std::move(t));
    py::capsule keep(owner, [](void *p) { delete static_cast<rt::Tensor *>(p); });
    return py::array(dt, shape, owner->raw(), keep);
  }

  std::string path_;
  std::unique_ptr<Compilation> c_;
};

/// Compiles `text` named `path`: (the program or None, text diagnostics, JSON diagnostics).
std::tuple<std::unique_ptr<Program>, std::string, std::string> compile(
    const std::string &text, const std::string &path,
    const std::vector<std::tuple<std::string, std::vector<std::pair<std::string, int64_t>>>>
        &meshes,
    const std::map<std::string, int64_t> &sizes, const std::vector<std::string> &library_paths,
    int64_t unroll, bool auto_pbroadcast) {
  CompileOptions options;
  options.library_paths = library_paths;
  options.unroll_max_trip_count = unroll;
  options.auto_pbroadcast = auto_pbroadcast;
  options.max_errors = 50;
  for (const auto &[mesh, axes] : meshes) {
    MeshOverride m;
    m.mesh = mesh;
    m.axes = axes;
    m.text = "(";
    for (size_t i = 0; i < axes.size(); ++i)
      m.text += (i ? ", " : "") + axes[i].first + ": " + std::to_string(axes[i].second);
    m.text = (mesh.empty() ? "" : mesh + "=") + m.text + ")";
    options.overrides.meshes.push_back(m);
  }
  options.overrides.sizes = sizes;
  auto c = std::make_unique<Compilation>();
  {
    py::gil_scoped_release release;
    compile_source(*c, path, text, options);
  }
  Reported r = render(c->diags, c->sources);
  if (!c->ok() || !c->module) return {nullptr, r.text, r.json};
  return {std::make_unique<Program>(path, std::move(c)), r.text, r.json};
}

}  // namespace
}  // namespace spmd::python

PYBIND11_MODULE(_spmdc, m) {
  using namespace spmd::python;
  m.doc() = "Bindings over the spmdc compiler library (use the `spmdc` package instead).";
  static py::exception<DiagnosticsError> diagnostics_error(m, "DiagnosticsError");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const DiagnosticsError &e) {
      py::object cls = diagnostics_error;
      PyErr_SetObject(cls.ptr(), py::make_tuple(e.reported.text, e.reported.json).ptr());
    }
  });
  m.attr("version") = SPMDC_VERSION;
  m.def("compile", &compile, py::arg("text"), py::arg("path"), py::arg("meshes"), py::arg("sizes"),
        py::arg("library_paths"), py::arg("unroll"), py::arg("auto_pbroadcast"));
  py::class_<Program>(m, "Program")
      .def("print", &Program::print, py::arg("types"))
      .def("functions", &Program::functions)
      .def("derive", &Program::derive)
      .def("shard", &Program::shard)
      .def("signature", &Program::signature)
      .def("run", &Program::run)
      .def("cost", &Program::cost)
      .def("show", &Program::show)
      .def("build", &Program::build);
}
