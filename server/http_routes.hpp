#pragma once
// The HTTP routes vigild serves. Thread: the returned handler runs on the network
// io_context and awaits catalog work on the CatalogPool.
#include <string>

#include "server/catalog_pool.hpp"
#include "server/http_server.hpp"

namespace vigil::server {

class Metrics;

struct RouteContext {
  CatalogPool& catalog;
  std::string database_mode;  // "embedded" or "external", shown by /healthz
  const Metrics* metrics = nullptr;  // GET /metrics (http_metrics.hpp); none: 404
};

HttpHandler make_http_routes(RouteContext ctx);

}  // namespace vigil::server
