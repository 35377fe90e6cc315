#pragma once
// Node routes of the HTTP API (docs/nodes.md, docs/openapi.yaml); any node answers for every node
// of the catalog:
//   GET  /api/v1/nodes                 {nodes: [{node, http, wire, self, state, live, headroom_bps,
//                                      cameras, handovers, lease_left_ms}]}, by name (http, wire:
//                                      where it serves, vigild --advertise; the playback proxy
//                                      learns the nodes from it)
//   GET  /api/v1/nodes/{name}          one node (404 if none)
//   POST /api/v1/nodes/{name}/drain    the node's cameras move to other nodes make-before-break
//                                      and it takes no new ones: {node, state, cameras} (cameras: to
//                                      move); 409 — nothing changed — when no other live node could
//                                      take them; 404 no such node. Progress: GET the node (cameras
//                                      left; state drained once none is).
//   POST /api/v1/nodes/{name}/undrain  the node takes cameras again: {node, state, handovers_cancelled}
// Reads are for viewers, changes for admins (http_routes' need_for). The list shows no camera.
// Thread: the session's network thread; catalog work on the CatalogPool. Errors: exceptions
// mapped by http_routes (CatalogError by its kind).
#include <boost/asio/awaitable.hpp>

#include "server/api/http_routes.hpp"
#include "server/net/http_query.hpp"

namespace vigil::server {

// Any path /api/v1/nodes[/...].
boost::asio::awaitable<HttpResponse> nodes_route(const RouteContext& ctx, const HttpRequest& req, const QueryParams& q);

}  // namespace vigil::server
