#pragma once
// The HTTP API's one error type and the one table from error to status.
// A route throws ApiError (BadRequest is its 400 shorthand) for what the client got wrong or
// what it may retry; catalog functions throw catalog::CatalogError for input they refuse, and
// the same table maps its kind. Everything else a route lets escape (std::invalid_argument from
// deep inside, a failed SQL statement, a bug) is the server's fault: answered 500, or 503 when
// the catalog is unreachable or too slow, and logged by the caller — never blamed on the client.
// Thread: any. Errors: none of its own.
#include <boost/beast/http/status.hpp>
#include <exception>
#include <stdexcept>
#include <string>

#include "catalog/catalog_error.hpp"

namespace vigil::server {

enum class ApiErrc {
  bad_request,
  unauthorized,
  forbidden,
  not_found,
  method_not_allowed,
  conflict,
  payload_too_large,
  unsupported_media_type,
  range_not_satisfiable,
  unprocessable,  // well-formed, but what it names cannot be processed (recorded media outside the limits)
  unavailable,    // a dependency is busy or down, or the resource is not ready yet: retry
};

class ApiError : public std::runtime_error {
 public:
  ApiError(ApiErrc code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ApiErrc code() const noexcept { return code_; }

 private:
  ApiErrc code_;
};

struct BadRequest : ApiError {
  explicit BadRequest(const std::string& message) : ApiError(ApiErrc::bad_request, message) {}
};

// The table.
boost::beast::http::status http_status(ApiErrc code) noexcept;
ApiErrc api_errc(catalog::CatalogError::Kind kind) noexcept;

// What to answer for an exception a route let escape. A server fault's message is generic: its
// detail is for the log, not the client.
struct ErrorAnswer {
  boost::beast::http::status status = boost::beast::http::status::internal_server_error;
  std::string message;
  bool server_fault = true;
  std::string detail;  // what() of the exception
};
ErrorAnswer answer_for(std::exception_ptr error);

}  // namespace vigil::server
