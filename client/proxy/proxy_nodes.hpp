#pragma once
// The nodes the proxy serves, learned from the catalog (docs/proxy.md, "Several nodes"): vigild
// lists every node sharing its catalog, with the HTTP and wire addresses each advertises and
// whether its lease is live (GET /api/v1/nodes). `vigil proxy --nodes` asks its --upstream nodes
// at start and adds the live ones it was not given, so a front door that goes away is not the
// proxy's only way in.
// Thread: start-up (runs its own io_context). Errors: throws std::runtime_error naming the
// upstream's answer when no upstream lists the nodes.
#include <chrono>
#include <string>
#include <vector>

#include "client/proxy/proxy_upstream.hpp"

namespace vigil::client {

struct LearnedNode {
  std::string name;
  UpstreamNode http;
  std::string wire;  // as advertised ("HOST:PORT", "tls://HOST:PORT"); empty: none
};

// The live nodes GET /api/v1/nodes lists on the first of UPSTREAMS that answers 200 (TOKEN as the
// bearer: a viewer's token), in the catalog's order.
std::vector<LearnedNode> learn_nodes(const std::vector<UpstreamNode>& upstreams, const std::string& token,
                                     std::chrono::milliseconds timeout);

}  // namespace vigil::client
