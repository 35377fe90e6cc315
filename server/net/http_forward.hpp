#pragma once
// One request passed on to another vigild node's HTTP API (docs/nodes.md, "One front door"): a
// node answering for footage on another node's volume asks that node and relays its answer. A
// small answer (an error, a thumbnail, an HLS segment: a Content-Length up to kWholeBytes, or
// none) is relayed whole with its status and header fields; a larger one (an export) streams
// through chunk by chunk as it arrives — never held whole. Plain HTTP to the node (an https://
// node is refused: not yet).
// Thread: the session's network thread (the connection runs on its executor). Errors: throws
// ForwardFailed when the node cannot be reached or does not answer within the time-out; a body cut
// off mid-way ends the viewer's connection (StreamedResponse).
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <stdexcept>
#include <string>

#include "server/net/http_server.hpp"

namespace vigil::server {

struct ForwardFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The header field a forwarded request carries (the forwarding node's name): the node that gets
// it answers itself and never forwards again, so two nodes with different views cannot loop.
inline constexpr const char* kForwardedByField = "X-Vigil-Front-Door";

struct ForwardOptions {
  std::string from_node;  // this node: sent in kForwardedByField
  // Connect and head (an export built in memory is answered once built: up to a minute or two on a
  // loaded node); then each chunk of the body.
  std::chrono::seconds timeout{120};
  std::size_t whole_bytes = 8u << 20;  // larger bodies stream
};

// Sends REQ (method, target, its Authorization and the header fields that shape a media answer:
// Range, If-Range, If-None-Match, Accept) to the node at BASE ("http://HOST:PORT"), and answers
// with the node's answer. The node checks the request's token itself (the catalog's tokens are
// every node's): the viewer's own token, so its scope and the audit trail stay the viewer's.
// BASE, REQ and OPTIONS must outlive the awaiting: pass named objects of the caller, never
// temporaries (GCC 12 destroys a temporary argument of a coroutine before the frame is done with it).
boost::asio::awaitable<HttpReply> forward_http(const std::string& base, const HttpRequest& req,
                                               const ForwardOptions& options);

}  // namespace vigil::server
