#pragma once
// GET /healthz (docs/metrics.md, "Health"): the catalog, the disks and the pulled cameras, each
// ok, degraded or down, and the node's status from them. Never waits on PostgreSQL, a disk or the
// camera manager: the catalog's part is what its probe thread last saw (catalog_health.hpp), the
// disks' what their IO threads' atomics say (disk_health.hpp), the cameras' what the camera
// manager last published (camera_status.hpp).
// The node is down (503) when the catalog is down or no volume can record; degraded (200) when any
// part is degraded or cameras are down (a camera's network is not the node); ok (200) otherwise.
// Thread: the network thread of the request. Errors: none of its own (a catalog query without a
// probe, in unit rigs, is answered as the catalog being down).
#include <boost/asio/awaitable.hpp>

#include "server/api/http_routes.hpp"

namespace vigil::server {

boost::asio::awaitable<HttpResponse> healthz(const RouteContext& ctx, const HttpRequest& req);

}  // namespace vigil::server
