#pragma once
// The one HTTP client of the tests: blocking HTTP/1.1 over loopback, one request per connection
// (Connection: close), the reply read until the server closes. Raw on purpose, so a test can also
// send what a proper client never would. Thread: any. Errors: a refused connection throws
// boost::system::system_error; a reply that is not HTTP has status 0.
#include <boost/json/fwd.hpp>
#include <cstdint>
#include <string>

namespace vigil::test {

// "@SECONDS.MICROS": an absolute time US (µs since the epoch) for a media URL's from= or to=.
inline std::string media_time(std::int64_t us) {
  const auto t = std::to_string(us);
  return "@" + t.substr(0, t.size() - 6) + "." + t.substr(t.size() - 6);
}

struct HttpResult {
  int status = 0;
  std::string head;               // the status line and header fields, as received
  std::string body;               // a chunked body: its chunks joined
  std::size_t chunks = 0;         // a chunked body: how many chunks came
  bool chunked_complete = false;  // a chunked body: it ended with its last (empty) chunk
  // The value of header NAME (case-insensitive), or "" if absent.
  std::string header(const std::string& name) const;
  // The body parsed as JSON (throws if it is not).
  boost::json::value json() const;
};

// RAW (request line, fields, blank line, body) sent exactly as is.
HttpResult http_exchange(const std::string& host_port, const std::string& raw);

// METHOD TARGET with RAW_EXTRA_HEADERS ("Name: value\r\n" each) and BODY after the blank line.
// It carries the token of the last vigild started (token(), "Authorization: Bearer …") unless
// RAW_EXTRA_HEADERS has an Authorization field of its own; http_request_without_token sends none.
HttpResult http_request(const std::string& host_port, const std::string& method, const std::string& target,
                        const std::string& raw_extra_headers = {}, const std::string& body = {});
HttpResult http_request_without_token(const std::string& host_port, const std::string& method,
                                      const std::string& target, const std::string& raw_extra_headers = {},
                                      const std::string& body = {});

// The admin token of the last vigild a test started (VIGIL_TOKEN, which the `vigil` processes a
// test runs inherit); empty before any.
std::string token();

// A JSON API at HOST: every call carries token(); a body (and every POST, PUT or PATCH) goes with
// its Content-Type and Content-Length.
struct HttpApi {
  std::string host;
  HttpResult call(const std::string& method, const std::string& target, const std::string& body = {},
                  const std::string& content_type = "application/json") const;
  HttpResult get(const std::string& target) const { return call("GET", target); }
};

}  // namespace vigil::test
