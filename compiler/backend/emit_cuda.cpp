// placeholder
#include "backend/backend.h"
namespace spmd::backend::detail {
std::string emit_cuda(const Prepared &, const SourceManager *, const EmitOptions &) { return ""; }
}
