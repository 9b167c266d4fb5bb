// lsp/server.cpp — the message loop and the method table of `spmdc lsp`.
#include "lsp/server.h"

#include <functional>
#include <map>
#include <memory>
#include <ostream>

#include "lsp/analysis.h"
#include "lsp/hover.h"
#include "lsp/navigation.h"
#include "lsp/positions.h"
#include "lsp/transport.h"
#include "support/limits.h"

namespace spmd::lsp {
namespace {

// JSON-RPC and LSP error codes.
constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kInternalError = -32603;
constexpr int kServerNotInitialized = -32002;

/// A request that cannot be answered: its JSON-RPC error.
struct RequestError {
  int code;
  std::string message;
};

/// Arrays and objects nest at most this deep in a message: copying or
/// printing a JSON value recurses once per level, and no LSP message nests
/// more than a few levels.
constexpr int kMaxJsonNesting = 256;

/// True when the brackets of the JSON text `body` (outside strings) nest at
/// most `limit` deep. Checked before parsing, so that no deep value is built.
bool nesting_at_most(std::string_view body, int limit) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

class Server {
 public:
  Server(std::ostream &out, const ServerOptions &options) : out_(out), options_(options) {}

  /// Handles one message body; false once `exit` was received.
  bool handle(const std::string &body) {
    if (!nesting_at_most(body, kMaxJsonNesting)) {
      reply_error(nullptr, kParseError,
                  "the message nests arrays and objects more than " +
                      std::to_string(kMaxJsonNesting) + " levels deep");
      return true;
    }
    Json message = Json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (message.is_discarded()) {
      reply_error(nullptr, kParseError, "the message is not valid JSON");
      return true;
    }
    const bool is_request = message.is_object() && message.contains("id");
    Json id = is_request ? message["id"] : Json();
    // LSP ids are integers or strings (JSON-RPC also allows null, which
    // cannot be told apart from "no id" in an answer).
    if (is_request && !id.is_number_integer() && !id.is_string()) {
      reply_error(nullptr, kInvalidRequest, "a request id must be an integer or a string");
      return true;
    }
    if (!message.is_object() || !message.contains("method") || !message["method"].is_string()) {
      // A response to a request of ours (we send none) or garbage.
      if (!(message.is_object() && (message.contains("result") || message.contains("error"))))
        reply_error(id, kInvalidRequest, "expected a JSON-RPC request or notification");
      return true;
    }
    const std::string method = message["method"].get<std::string>();
    const Json params = message.contains("params") ? message["params"] : Json::object();
    if (method == "exit") {
      exit_status_ = shutdown_ ? 0 : 1;
      return false;
    }
    try {
      if (is_request) {
        reply(id, request(method, params));
      } else {
        notification(method, params);
      }
    } catch (const RequestError &e) {
      if (is_request) reply_error(id, e.code, e.message);
    } catch (const Json::exception &e) {
      if (is_request) reply_error(id, kInvalidParams, std::string("bad parameters: ") + e.what());
    } catch (const std::exception &e) {
      if (is_request) reply_error(id, kInternalError, std::string("internal error: ") + e.what());
    }
    return true;
  }

  int exit_status() const { return exit_status_; }

 private:
  Json request(const std::string &method, const Json &params) {
    if (method == "initialize") {
      initialized_ = true;
      return initialize_result();
    }
    if (!initialized_) throw RequestError{kServerNotInitialized, "initialize first"};
    if (shutdown_) throw RequestError{kInvalidRequest, "the server is shutting down"};
    if (method == "shutdown") {
      shutdown_ = true;
      return nullptr;
    }
    if (method == "textDocument/hover") {
      auto [analysis, offset] = document_position(params);
      std::optional<std::string> text = hover_markdown(analysis, offset);
      if (!text) return nullptr;
      return Json{{"contents", {{"kind", "markdown"}, {"value", *text}}}};
    }
    if (method == "textDocument/definition") {
      auto [analysis, offset] = document_position(params);
      return definition_locations(analysis, offset);
    }
    if (method == "textDocument/formatting") return formatting_edits(document(params));
    throw RequestError{kMethodNotFound, "unknown method `" + method + "`"};
  }

  void notification(const std::string &method, const Json &params) {
    if (!initialized_ || shutdown_) return;
    if (method == "textDocument/didOpen") {
      const Json &doc = params.at("textDocument");
      open(doc.at("uri").get<std::string>(), doc.at("text").get<std::string>(),
           doc.value("version", 0));
    } else if (method == "textDocument/didChange") {
      // Full synchronization: the last change holds the whole text.
      const Json &changes = params.at("contentChanges");
      if (!changes.is_array() || changes.empty()) return;
      const Json &doc = params.at("textDocument");
      open(doc.at("uri").get<std::string>(), changes.back().at("text").get<std::string>(),
           doc.value("version", 0));
    } else if (method == "textDocument/didClose") {
      std::string uri = params.at("textDocument").at("uri").get<std::string>();
      documents_.erase(uri);
      publish(uri, Json::array(), std::nullopt);
    }
    // Anything else (initialized, $/cancelRequest, didSave, ...) needs no answer.
  }

  Json initialize_result() const {
    return {{"capabilities",
             {{"positionEncoding", "utf-16"},
              {"textDocumentSync", {{"openClose", true}, {"change", 1}}},
              {"hoverProvider", true},
              {"definitionProvider", true},
              {"documentFormattingProvider", true}}},
            {"serverInfo", {{"name", "spmdc"}, {"version", SPMDC_VERSION}}}};
  }

  void open(const std::string &uri, std::string text, int version) {
    if (static_cast<int64_t>(text.size()) > kMaxSourceBytes) {
      // Like `spmdc check` of such a file: refused, said where the editor shows it.
      documents_.erase(uri);
      publish(uri,
              Json::array({{{"range", range_json("", 0, 0)},
                            {"severity", 1},
                            {"code", "io-error"},
                            {"source", "spmdc"},
                            {"message", "the document has " + std::to_string(text.size()) +
                                            " bytes; spmdc reads sources of at most 16 MiB " +
                                            "(docs/limits.md)"}}}),
              version);
      return;
    }
    documents_[uri] = analyze(uri, std::move(text), options_.compile);
    publish(uri, lsp_diagnostics(*documents_[uri]), version);
  }

  void publish(const std::string &uri, Json diagnostics, std::optional<int> version) {
    Json params = {{"uri", uri}, {"diagnostics", std::move(diagnostics)}};
    if (version) params["version"] = *version;
    send({{"jsonrpc", "2.0"},
          {"method", "textDocument/publishDiagnostics"},
          {"params", std::move(params)}});
  }

  const Analysis &document(const Json &params) {
    std::string uri = params.at("textDocument").at("uri").get<std::string>();
    auto it = documents_.find(uri);
    if (it == documents_.end())
      throw RequestError{kInvalidParams, "`" + uri + "` is not an open document"};
    return *it->second;
  }

  std::pair<const Analysis &, uint32_t> document_position(const Json &params) {
    const Analysis &a = document(params);
    std::optional<Position> at = position_from_json(params.at("position"));
    if (!at)
      throw RequestError{kInvalidParams,
                         "a position is {\"line\": L, \"character\": C} with non-negative "
                         "integers"};
    return {a, offset_of(a.text(), *at)};
  }

  void reply(const Json &id, Json result) {
    send({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
  }
  void reply_error(const Json &id, int code, const std::string &message) {
    send({{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}});
  }
  void send(const Json &message) {
    write_message(out_, message.dump(-1, ' ', false, Json::error_handler_t::replace));
  }

  std::ostream &out_;
  const ServerOptions &options_;
  std::map<std::string, std::unique_ptr<Analysis>> documents_;
  bool initialized_ = false;
  bool shutdown_ = false;
  int exit_status_ = 1;
};

}  // namespace

int run_server(std::istream &in, std::ostream &out, const ServerOptions &options) {
  Server server(out, options);
  std::string error;
  while (std::optional<std::string> body = read_message(in, error))
    if (!server.handle(*body)) return server.exit_status();
  if (!error.empty() && options.log) *options.log << "spmdc lsp: " << error << "\n";
  return 1;
}

}  // namespace spmd::lsp
