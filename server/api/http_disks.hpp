#pragma once
// Disk and admission state routes of the HTTP API (docs/openapi.yaml):
//   GET /api/v1/disks                    per disk of this node: volume, policy, profile id/date (or
//                                        "not profiled"), the admitted streams (kind, rates), the
//                                        predicted real-time busy time per cycle against the r_RT
//                                        share (slack), the largest rate a new stream could still
//                                        get, cycles, misses, model_optimistic
//   GET /api/v1/disks/{id}/profile       the newest stored profile document (404 if none)
//   GET /api/v1/admission/decisions?from[&to][&disk][&camera][&outcome][&limit][&cursor]
//                                        the audit rows, newest first, keyset-paginated
// The admitted set is copied under Disk::mu (held only for the copy; the IO thread never takes
// it) and the model evaluated outside it; counters are the IO thread's atomics.
// Thread: the session's network thread; catalog work on the CatalogPool. Errors: exceptions
// mapped by http_routes.
#include <boost/asio/awaitable.hpp>

#include "server/net/http_query.hpp"
#include "server/api/http_routes.hpp"

namespace vigil::server {

// Any path /api/v1/disks[/...].
boost::asio::awaitable<HttpResponse> disks_route(const RouteContext& ctx, const HttpRequest& req, const QueryParams& q);
// /api/v1/admission/decisions.
boost::asio::awaitable<HttpResponse> decisions_route(const RouteContext& ctx, const HttpRequest& req,
                                                     const QueryParams& q);

}  // namespace vigil::server
