#include "server/net/api_error.hpp"

#include <pqxx/except>

#include "common/redact.hpp"

namespace vigil::server {

namespace http = boost::beast::http;

http::status http_status(ApiErrc code) noexcept {
  switch (code) {
    case ApiErrc::bad_request: return http::status::bad_request;
    case ApiErrc::unauthorized: return http::status::unauthorized;
    case ApiErrc::forbidden: return http::status::forbidden;
    case ApiErrc::not_found: return http::status::not_found;
    case ApiErrc::method_not_allowed: return http::status::method_not_allowed;
    case ApiErrc::conflict: return http::status::conflict;
    case ApiErrc::payload_too_large: return http::status::payload_too_large;
    case ApiErrc::unsupported_media_type: return http::status::unsupported_media_type;
    case ApiErrc::range_not_satisfiable: return http::status::range_not_satisfiable;
    case ApiErrc::unprocessable: return http::status::unprocessable_entity;
    case ApiErrc::unavailable: return http::status::service_unavailable;
  }
  return http::status::internal_server_error;
}

ApiErrc api_errc(catalog::CatalogError::Kind kind) noexcept {
  switch (kind) {
    case catalog::CatalogError::Kind::invalid: return ApiErrc::bad_request;
    case catalog::CatalogError::Kind::not_found: return ApiErrc::not_found;
    case catalog::CatalogError::Kind::conflict: return ApiErrc::conflict;
  }
  return ApiErrc::bad_request;
}

namespace {
ErrorAnswer answer_unmasked(std::exception_ptr error);
}  // namespace

// An error text may quote a camera URL (a refused field, a catalog message): its password is
// masked before the answer is sent or logged.
ErrorAnswer answer_for(std::exception_ptr error) {
  auto a = answer_unmasked(std::move(error));
  if (has_credentials(a.message)) a.message = redact_credentials(a.message);
  if (has_credentials(a.detail)) a.detail = redact_credentials(a.detail);
  return a;
}

namespace {

ErrorAnswer answer_unmasked(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const ApiError& e) {
    return {http_status(e.code()), e.what(), false, e.what()};
  } catch (const catalog::CatalogError& e) {
    return {http_status(api_errc(e.kind())), e.what(), false, e.what()};
  } catch (const pqxx::broken_connection& e) {
    return {http::status::service_unavailable, "the catalog is unreachable; retry shortly (logged)", true, e.what()};
  } catch (const pqxx::sql_error& e) {
    if (e.sqlstate() == "57014") {  // query_canceled: the pool's statement time-out
      return {http::status::service_unavailable, "the catalog query took too long; ask for less", false, e.what()};
    }
    return {http::status::internal_server_error, "catalog error (logged)", true, e.what()};
  } catch (const std::exception& e) {
    return {http::status::internal_server_error, "internal error (logged)", true, e.what()};
  } catch (...) {
    return {http::status::internal_server_error, "internal error (logged)", true, "not a std::exception"};
  }
}

}  // namespace

}  // namespace vigil::server
