#pragma once
// One HTTP/1.1 request (GET, HEAD, or a passed-through POST/PUT/DELETE) to a vigild node (Boost.Beast client over an Asio coroutine): connect,
// send, read the whole answer, close. Whatever the node answers (2xx, 304, 4xx, 5xx) comes back
// as it is, with the header fields a viewer needs; a node that cannot be reached becomes a 502
// and one that does not answer within the time-out a 504, both with a JSON reason — never a hang.
// Thread: the caller's io_context (the proxy's one thread). Errors: none thrown; all in the reply.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "client/proxy/proxy_reply.hpp"

namespace vigil::client {

struct UpstreamNode {
  std::string host, port;
  bool tls = false;  // https:// (HTTP) or tls:// (wire protocol): verified against the proxy's --upstream-ca
  std::shared_ptr<boost::asio::ssl::context> tls_context;  // set when TLS, before the first request
  std::string name() const { return host + ":" + port; }
};

// "NODE[,NODE...]", each HOST:PORT, https://HOST:PORT or tls://HOST:PORT (the last two: TLS);
// throws std::invalid_argument on a malformed list.
std::vector<UpstreamNode> parse_upstreams(const std::string& list);

struct UpstreamRequest {
  std::string method = "GET";  // any HTTP method; HEAD answers have no body
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;  // e.g. Authorization, Range
  std::string body;                                          // sent when not empty
};

struct UpstreamAnswer {
  ProxyReply reply;
  bool reached = false;  // false: a transport failure (reply is the 502/504)
};

// Sends REQ to NODE; the whole exchange must finish within TIMEOUT. Bodies above MAX_BODY bytes
// are refused (502).
boost::asio::awaitable<UpstreamAnswer> fetch_upstream(const UpstreamNode& node, const UpstreamRequest& req,
                                                      std::chrono::milliseconds timeout, std::size_t max_body);

}  // namespace vigil::client
