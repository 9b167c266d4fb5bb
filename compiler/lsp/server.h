// lsp/server.h — `spmdc lsp`: a Language Server over a pair of streams.
//
// run_server reads JSON-RPC messages (lsp/transport.h) until `exit` or the
// end of the input and answers them:
//   initialize, initialized, shutdown, exit — the lifecycle;
//   textDocument/didOpen, didChange (full text), didClose — the open
//     documents, each re-checked on every change and its diagnostics pushed
//     with textDocument/publishDiagnostics (lsp/analysis.h);
//   textDocument/hover, definition, formatting (lsp/hover.h, navigation.h).
// Bad input never ends the session: malformed JSON is answered with a
// ParseError, a request that is not an object with InvalidRequest, an unknown
// request with MethodNotFound, bad parameters with InvalidParams; unknown
// notifications are ignored. Only a broken frame ends it (exit status 1).
#pragma once

#include <iosfwd>

#include "pipeline/compile.h"

namespace spmd::lsp {

struct ServerOptions {
  CompileOptions compile;       // how documents are checked (library paths, ...)
  std::ostream *log = nullptr;  // problems with the stream itself (stderr)
};

/// Serves until `exit` (status 0 after `shutdown`, 1 otherwise) or the end
/// of `in` (1).
int run_server(std::istream &in, std::ostream &out, const ServerOptions &options);

}  // namespace spmd::lsp
