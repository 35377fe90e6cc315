#pragma once
// What the proxy hands a viewer: a status, the header fields worth passing on, and a body in a
// shared immutable buffer (cached, or shared by every viewer waiting on one upstream fetch).
// Thread: values; the body is never modified after it is made. Errors: none.
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vigil::client {

struct ProxyReply {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // field name → value, as passed on
  std::shared_ptr<const std::string> body;                   // never null once made
  // The part of BODY sent (a Range request served from a cached whole body).
  std::size_t offset = 0, length = std::string::npos;

  std::string header(std::string_view name) const;  // "" if absent (case-insensitive)
  std::size_t size() const { return body ? body->size() : 0; }
  std::string_view view() const { return body ? std::string_view(*body).substr(offset, length) : std::string_view(); }
};

// A reply of STATUS with a JSON {"error": REASON} body (the shape vigild answers errors in).
ProxyReply json_error(int status, std::string_view reason);

}  // namespace vigil::client
