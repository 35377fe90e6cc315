// The HTTP API's one error table: what the client got wrong is a 4xx with the reason; what went
// wrong in the server (an invalid_argument from deep inside, a failed statement, a lost catalog)
// is a 5xx with a generic message and its detail kept for the log.
#include <catch2/catch_test_macros.hpp>

#include <pqxx/except>
#include <stdexcept>

#include "catalog/event_rows.hpp"
#include "server/net/api_error.hpp"

using namespace vigil;
using namespace vigil::server;
namespace http = boost::beast::http;

namespace {
template <class E>
ErrorAnswer answer(const E& e) {
  return answer_for(std::make_exception_ptr(e));
}
}  // namespace

TEST_CASE("the client's mistakes are 4xx with their reason", "[http][errors]") {
  const auto bad = answer(BadRequest("parameter 'from' is required"));
  CHECK(bad.status == http::status::bad_request);
  CHECK(bad.message == "parameter 'from' is required");
  CHECK_FALSE(bad.server_fault);
  CHECK(answer(ApiError(ApiErrc::payload_too_large, "too big")).status == http::status::payload_too_large);
  CHECK(answer(ApiError(ApiErrc::unavailable, "retry")).status == http::status::service_unavailable);

  CHECK(answer(catalog::CatalogError::invalid("camera name: ...")).status == http::status::bad_request);
  CHECK(answer(catalog::CatalogError::conflict("taken")).status == http::status::conflict);
  const auto unknown = answer(catalog::UnknownCamera("porch"));
  CHECK(unknown.status == http::status::not_found);
  CHECK(unknown.message == "no camera named 'porch'");
  CHECK_FALSE(unknown.server_fault);
}

TEST_CASE("the server's failures are 5xx, never blamed on the client", "[http][errors]") {
  const auto bug = answer(std::invalid_argument("histogram bounds must be ascending numbers"));
  CHECK(bug.status == http::status::internal_server_error);
  CHECK(bug.server_fault);
  CHECK(bug.message.find("histogram") == std::string::npos);  // the detail is for the log
  CHECK(bug.detail == "histogram bounds must be ascending numbers");

  const auto lost = answer(pqxx::broken_connection("server closed the connection"));
  CHECK(lost.status == http::status::service_unavailable);
  CHECK(lost.server_fault);
  const auto sql = answer(pqxx::sql_error("relation does not exist", "SELECT", "42P01"));
  CHECK(sql.status == http::status::internal_server_error);
  CHECK(sql.server_fault);
  const auto slow = answer(pqxx::sql_error("canceling statement due to statement timeout", "SELECT", "57014"));
  CHECK(slow.status == http::status::service_unavailable);
  CHECK_FALSE(slow.server_fault);
  CHECK(answer(42).status == http::status::internal_server_error);
}

TEST_CASE("a camera URL's password is masked in the answer and in the detail for the log", "[http][errors]") {
  const auto bad = answer(BadRequest("field 'url': cannot use rtsp://admin:hunter2@10.0.0.7/s"));
  CHECK(bad.message == "field 'url': cannot use rtsp://admin:***@10.0.0.7/s");
  CHECK(bad.detail.find("hunter2") == std::string::npos);
  const auto internal = answer(std::runtime_error("opening rtsp://a:hunter2@cam failed"));
  CHECK(internal.detail == "opening rtsp://a:***@cam failed");
}
