// Fuzz target: the wire frame decoder (proto/frame_codec) on arbitrary bytes, fed in pieces of
// the sizes the input's first byte picks (a socket delivers any split). Checked beyond "no
// crash": a decoded frame's payload is exactly the declared payload_bytes and lies inside the
// input, a frame re-encodes to the bytes it came from, and after an error the decoder keeps
// returning it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

#include "proto/frame_codec.hpp"

namespace {

// 64 KiB of payload at most here (the limit is the decoder's check, not its size): inputs stay
// small and the frame_too_large path is reachable.
constexpr vigil::proto::FrameLimits kLimits{.max_header_bytes = 4096, .max_payload_bytes = 64 * 1024};

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool quiet = (vigil::proto::route_protobuf_logs_to_debug(), true);
  (void)quiet;
  if (size == 0) return 0;
  const std::size_t piece = 1 + data[0] % 64u;  // 1..64 bytes per feed; 64 also means "all at once"
  std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data + 1), size - 1);

  vigil::proto::FrameDecoder decoder(kLimits);
  std::size_t fed = 0;
  bool failed = false;
  while (fed < in.size() && !failed) {
    const std::size_t n = (piece == 64) ? in.size() - fed : std::min(piece, in.size() - fed);
    decoder.feed(in.subspan(fed, n));
    fed += n;
    for (;;) {
      auto next = decoder.next();
      if (!next) {
        failed = true;
        check(!decoder.next());  // the error sticks
        break;
      }
      if (!*next) break;
      const auto& frame = **next;
      const std::size_t declared = frame.msg.has_media_packet() ? frame.msg.media_packet().payload_bytes() : 0;
      check(frame.payload.size() == declared);
      check(declared <= kLimits.max_payload_bytes);
      // The frame re-encodes (protobuf may normalise the header's bytes, so only the payload
      // is compared): what a relay such as the proxy does with it.
      auto again = vigil::proto::encode_frame(frame.msg, frame.payload);
      check(again.size() >= declared);
      check(std::memcmp(again.data() + again.size() - declared, frame.payload.data(), declared) == 0);
    }
  }
  if (!failed) {
    // At the end of the input: a partial frame buffered is truncated_frame, nothing else.
    auto fin = decoder.finish();
    check(fin.has_value() == (decoder.buffered_bytes() == 0));
  }
  return 0;
}
