// ops/types.cpp — parsing and printing of dtypes, axis sets and types.
#include "ops/types.h"

namespace spmd {

std::optional<DType> parse_dtype(std::string_view name) {
  if (name == "f32") return DType::F32;
  if (name == "f64") return DType::F64;
  if (name == "bf16") return DType::BF16;
  if (name == "i32") return DType::I32;
  if (name == "bool") return DType::Bool;
  if (name == "key") return DType::Key;
  return std::nullopt;
}

std::vector<int> AxisSet::axes() const {
  std::vector<int> out;
  for (int k = 0; k < 64; ++k)
    if (contains(k)) out.push_back(k);
  return out;
}

std::string shape_type_str(DType dtype, const Shape &shape) {
  std::string s = dtype_name(dtype);
  s += "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string axis_set_str(AxisSet set, const rt::Mesh &mesh) {
  std::string s = "{";
  bool first = true;
  for (int a : set.axes()) {
    s += first ? "" : ", ";
    first = false;
    s += a < static_cast<int>(mesh.axes().size()) ? mesh.axes()[a].name : "?" + std::to_string(a);
  }
  return s + "}";
}

std::string type_str(const Type &type, const rt::Mesh &mesh) {
  std::string s = shape_type_str(type.dtype, type.shape);
  if (!type.variance.empty()) s += axis_set_str(type.variance, mesh);
  return s;
}

std::string axis_list_str(const std::vector<int> &axes, const rt::Mesh &mesh) {
  auto name = [&](int a) {
    return a < static_cast<int>(mesh.axes().size()) ? mesh.axes()[a].name : "?";
  };
  if (axes.size() == 1) return name(axes[0]);
  std::string s = "(";
  for (size_t i = 0; i < axes.size(); ++i) s += (i ? ", " : "") + name(axes[i]);
  return s + ")";
}

std::string spec_str(const rt::PartitionSpec &spec, const rt::Mesh &mesh) {
  size_t n = spec.size();
  while (n > 0 && spec[n - 1].empty()) --n;
  std::string s = "P(";
  for (size_t d = 0; d < n; ++d)
    s += (d ? ", " : "") + (spec[d].empty() ? std::string("None") : axis_list_str(spec[d], mesh));
  return s + ")";
}

}  // namespace spmd
