#include "client/proxy/proxy_nodes.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json.hpp>
#include <stdexcept>

namespace asio = boost::asio;

namespace vigil::client {

std::vector<LearnedNode> learn_nodes(const std::vector<UpstreamNode>& upstreams, const std::string& token,
                                     std::chrono::milliseconds timeout) {
  UpstreamRequest req;
  req.target = "/api/v1/nodes";
  if (!token.empty()) req.headers.emplace_back("Authorization", "Bearer " + token);
  std::string refused = "no --upstream node given";
  for (const auto& node : upstreams) {
    asio::io_context io(1);
    auto answer = asio::co_spawn(io, fetch_upstream(node, req, timeout, 1u << 20), asio::use_future);
    io.run();
    const UpstreamAnswer a = answer.get();
    if (a.reply.status != 200) {
      refused = node.name() + " answered " + std::to_string(a.reply.status) + ": " + std::string(a.reply.view());
      continue;
    }
    std::vector<LearnedNode> out;
    const auto body = boost::json::parse(a.reply.view());
    for (const auto& n : body.at("nodes").as_array()) {
      const auto& o = n.as_object();
      const std::string http(o.at("http").as_string());
      if (!o.at("live").as_bool() || http.empty() || http.starts_with("https://")) continue;
      auto parsed = parse_upstreams(http);  // "http://HOST:PORT"
      out.push_back({.name = std::string(o.at("node").as_string()),
                     .http = std::move(parsed.front()),
                     .wire = std::string(o.at("wire").as_string())});
    }
    return out;
  }
  throw std::runtime_error("cannot learn the nodes (GET /api/v1/nodes): " + refused);
}

}  // namespace vigil::client
