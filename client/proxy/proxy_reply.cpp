#include "client/proxy/proxy_reply.hpp"

#include <boost/json.hpp>
#include <cctype>

namespace vigil::client {

std::string ProxyReply::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k.size() == name.size() && std::equal(k.begin(), k.end(), name.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
        })) {
      return v;
    }
  }
  return {};
}

ProxyReply json_error(int status, std::string_view reason) {
  ProxyReply r;
  r.status = status;
  r.headers = {{"Content-Type", "application/json"}, {"Cache-Control", "no-store"}};
  r.body = std::make_shared<const std::string>(boost::json::serialize(boost::json::object{{"error", reason}}));
  return r;
}

}  // namespace vigil::client
