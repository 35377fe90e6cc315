#pragma once
// The wire session's answers that need no channel, apart from the socket code so they can be
// driven frame by frame without one (tests/fuzz/wire_hello_fuzz.cpp): the pre-hello state
// machine (the first message must be a hello of our protocol version; anything else closes the
// connection) and the reply to a request no channel took (ping, a second hello, a request this
// server cannot serve).
// Thread: pure code, any thread. Errors: values (the Error envelope to send).
#include <cstdint>

#include "proto/vigil.pb.h"

namespace vigil::server {

struct WireReply {
  proto::Envelope msg;
  bool close = false;  // the connection ends once MSG is sent
};

// Whether MSG, the connection's first message, is a hello whose token must be checked before
// it is answered (a hello of another version is refused without looking at its token).
bool hello_needs_token(const proto::Envelope& msg) noexcept;

// The answer to the connection's first message (after its token was accepted, when one is
// checked): a HelloReply, or an Error and close when MSG is not a hello of our version.
WireReply first_message_reply(const proto::Envelope& msg, std::uint64_t session_id, std::uint64_t max_payload_bytes);

// The answer, after hello, to a message no channel took. Requests this server cannot serve (no
// volume) get an UNSUPPORTED error and the session stays open, so a client can tell "not here"
// from "broken".
WireReply other_request(const proto::Envelope& msg);

}  // namespace vigil::server
