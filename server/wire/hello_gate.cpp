#include "server/wire/hello_gate.hpp"

#include <string>

#include "proto/frame_codec.hpp"

namespace vigil::server {

bool hello_needs_token(const proto::Envelope& msg) noexcept {
  return msg.has_hello() && msg.hello().protocol_version() == proto::kProtocolVersion;
}

WireReply first_message_reply(const proto::Envelope& msg, std::uint64_t session_id, std::uint64_t max_payload_bytes) {
  if (!msg.has_hello()) return {proto::make_error(errc::unauthenticated, "the first message must be hello"), true};
  const auto& hello = msg.hello();
  if (hello.protocol_version() != proto::kProtocolVersion) {
    return {proto::make_error(errc::unsupported, "protocol version " + std::to_string(hello.protocol_version()) +
                                                     " not supported; this server speaks " +
                                                     std::to_string(proto::kProtocolVersion)),
            true};
  }
  WireReply r;
  auto* hr = r.msg.mutable_hello_reply();
  hr->set_server_version(VIGIL_VERSION);
  hr->set_protocol_version(proto::kProtocolVersion);
  hr->set_max_frame_bytes(max_payload_bytes);
  hr->set_session_id(session_id);
  return r;
}

WireReply other_request(const proto::Envelope& msg) {
  switch (msg.body_case()) {
    case proto::Envelope::kPing: {
      WireReply r;
      r.msg.mutable_pong()->set_nonce(msg.ping().nonce());
      return r;
    }
    case proto::Envelope::kHello:
      return {proto::make_error(errc::invalid_argument, "hello was already received on this connection"), false};
    case proto::Envelope::kOpenRecord:
    case proto::Envelope::kMediaPacket:
      return {proto::make_error(errc::unsupported, "this server has no volume to record on"), false};
    case proto::Envelope::kOpenPlayback:
    case proto::Envelope::kControl:
      return {proto::make_error(errc::unsupported, "this server has no volume to play from"), false};
    case proto::Envelope::kQueryRequest:
      return {proto::make_error(errc::unsupported, "this server has no catalog to query"), false};
    default: return {proto::make_error(errc::invalid_argument, "message is not a client request"), false};
  }
}

}  // namespace vigil::server
