#pragma once
// Camera-group routes of the HTTP API (docs/openapi.yaml):
//   GET    /api/v1/groups        every group, by name: {groups: [{id, name, cameras, created_at_us}]}
//   POST   /api/v1/groups        {name[, cameras]}: 201 with the group; 409 a taken name; 404 a camera
//                                that does not exist
//   GET    /api/v1/groups/{id}   one group
//   PATCH  /api/v1/groups/{id}   {name?, cameras?}: renames and/or sets the members (in that order)
//   DELETE /api/v1/groups/{id}   deletes the group (its cameras stay)
// Reads are for viewers, writes for admins (http_routes' need_for). A token limited to some
// cameras sees only those among a group's members, and only groups that hold one of them: a group
// never shows a camera its token could not list.
// Thread: the session's network thread; catalog work on the CatalogPool. Errors: exceptions
// mapped by http_routes (CatalogError by its kind).
#include <boost/asio/awaitable.hpp>

#include "server/api/http_routes.hpp"
#include "server/net/http_query.hpp"

namespace vigil::server {

// Any path /api/v1/groups[/...].
boost::asio::awaitable<HttpResponse> groups_route(const RouteContext& ctx, const HttpRequest& req,
                                                  const QueryParams& q);

}  // namespace vigil::server
