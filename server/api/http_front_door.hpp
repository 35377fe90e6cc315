#pragma once
// One front door (docs/nodes.md): any node's HTTP API answers for any camera. The media routes
// that read recorded bytes from a volume — export.mp4, hls/seg.m4s, thumbnail.jpg — and live HLS
// (kept by the node recording the camera) are answered by the node that holds them: here, or
// proxied to it (server/net/http_forward.hpp), the viewer's token passed on. Everything the
// shared catalog answers (timelines, playlists, export parts, HLS init segments, cameras) is
// answered here. A holder whose lease expired (a dead node) is a 503 naming it — unless this node
// has an archive tier and every segment asked for that the dead node held is closed and copied:
// then this node reads the copies (catalog/copy_stand_in.hpp), and the 503 otherwise says which
// span has no copy.
// Thread: the session's network thread. Errors: ApiError (503) for a holder down or unreachable;
// pqxx from the catalog.
#include <boost/asio/awaitable.hpp>
#include <optional>
#include <string>

#include "server/api/http_routes.hpp"
#include "server/net/http_query.hpp"

namespace vigil::server {

// The answer of the node holding what REQ (a route under /api/v1/cameras/CAMERA/…, PATH_TAIL the
// rest: "export.mp4", "hls/seg.m4s", "live.m3u8", …) asks for; nullopt: this node answers (it
// holds it, nothing is recorded there, the route is the catalog's, the request was forwarded to
// it already, or ctx.node is empty: a server alone).
boost::asio::awaitable<std::optional<HttpReply>> answer_elsewhere(const RouteContext& ctx, const HttpRequest& req,
                                                                  const QueryParams& q, const std::string& camera,
                                                                  const std::string& path_tail);

}  // namespace vigil::server
