#pragma once
// A demuxed packet, owned. Thread: any (one owner).
extern "C" {
#include <libavcodec/packet.h>
}
#include <cstdint>
#include <memory>

namespace vigil::client {

struct PacketFree {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
using PacketPtr = std::unique_ptr<AVPacket, PacketFree>;

// Frames the source lost right before this packet (the buffered RTSP session's depacketizer
// dropped them after an RTP loss: rtp_depacketizer.hpp), so the recorder can report exactly that
// hole as source_loss. Carried in AVPacket::opaque, the field libav* leaves to its user (null, 0,
// in every packet libavformat reads).
inline void set_frames_lost_before(AVPacket& p, std::uint64_t frames) noexcept {
  p.opaque = reinterpret_cast<void*>(static_cast<std::uintptr_t>(frames));
}
inline std::uint64_t frames_lost_before(const AVPacket& p) noexcept {
  return reinterpret_cast<std::uintptr_t>(p.opaque);
}

}  // namespace vigil::client
