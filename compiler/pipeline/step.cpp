// pipeline/step.cpp — see step.h.
#include "pipeline/step.h"

#include <cstdlib>
#include <stdexcept>

#include "ir/verifier.h"

namespace spmd::pipeline {
namespace {

[[noreturn]] void fail(std::string_view script, std::string_view step,
                       const std::vector<std::string> &problems) {
  std::string text = "IR verification failed after step `" + std::string(step) + "` of the " +
                     std::string(script) + " script:";
  for (const std::string &p : problems) text += "\n  " + p;
  throw std::logic_error(text);
}

}  // namespace

bool verify_steps() {
#ifndef NDEBUG
  return true;
#else
  static const bool on = [] {
    const char *v = std::getenv("SPMDC_VERIFY_STEPS");
    return v != nullptr && std::string_view(v) == "1";
  }();
  return on;
#endif
}

void verify_after(std::string_view script, std::string_view step, const ir::Module &module,
                  const ir::Function &function, bool printable) {
  if (auto problems = ir::verify_function(module, function, {printable}); !problems.empty())
    fail(script, step, problems);
}

void verify_after(std::string_view script, std::string_view step, const ir::Module &module,
                  bool printable) {
  if (auto problems = ir::verify_module(module, {printable}); !problems.empty())
    fail(script, step, problems);
}

}  // namespace spmd::pipeline
