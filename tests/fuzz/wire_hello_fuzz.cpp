// Fuzz target: the wire session's pre-hello/hello state machine (server/wire/hello_gate) driven
// frame by frame as wire_session.cpp drives it, without a socket: bytes in pieces through the
// frame decoder, the first frame through the hello gate (its token accepted or refused as the
// input's first byte says), later frames through other_request. Checked: every reply encodes
// as a frame, nothing is answered after a reply that closes the connection, a refusal is an
// Error, and only a hello of our version opens the session.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>

#include "proto/frame_codec.hpp"
#include "server/wire/hello_gate.hpp"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool quiet = (vigil::proto::route_protobuf_logs_to_debug(), true);
  (void)quiet;
  if (size == 0) return 0;
  const bool token_ok = data[0] & 1;
  const bool auth = data[0] & 2;
  const std::size_t piece = 1 + (data[0] >> 2);  // 1..64 bytes per read
  std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data + 1), size - 1);

  // The limits wire_session.cpp gives its decoder (16 MiB payloads), but no input is that big.
  vigil::proto::FrameDecoder decoder(vigil::proto::FrameLimits{.max_payload_bytes = 16u << 20});
  bool said_hello = false, open = true;
  std::string out;
  for (std::size_t fed = 0; fed < in.size() && open;) {
    const std::size_t n = std::min(piece, in.size() - fed);
    decoder.feed(in.subspan(fed, n));
    fed += n;
    for (;;) {
      auto next = decoder.next();
      if (!next) {
        vigil::proto::append_frame(out, vigil::proto::make_error(static_cast<vigil::errc>(next.error().value()),
                                                                 next.error().message()));
        open = false;
        break;
      }
      if (!*next) break;
      const auto& msg = (**next).msg;
      vigil::server::WireReply reply;
      if (!said_hello) {
        if (auth && vigil::server::hello_needs_token(msg) && !token_ok) {
          check(msg.has_hello());
          open = false;  // the session queues an unauthenticated Error and ends
          break;
        }
        reply = vigil::server::first_message_reply(msg, 7, 16u << 20);
        said_hello = !reply.close;
        check(said_hello == (msg.has_hello() && msg.hello().protocol_version() == vigil::proto::kProtocolVersion));
        check(said_hello ? reply.msg.has_hello_reply() : reply.msg.has_error());
      } else {
        reply = vigil::server::other_request(msg);
        check(reply.msg.has_pong() || reply.msg.has_error());
        check(!reply.close);
      }
      vigil::proto::append_frame(out, reply.msg);
      if (reply.close) {
        open = false;
        break;
      }
    }
  }
  // What was sent decodes as frames, with nothing after the closing reply.
  vigil::proto::FrameDecoder client;
  client.feed(std::as_bytes(std::span(out.data(), out.size())));
  for (;;) {
    auto next = client.next();
    check(next.has_value());
    if (!*next) break;
  }
  check(client.finish().has_value());
  return 0;
}
