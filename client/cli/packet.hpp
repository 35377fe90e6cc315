#pragma once
// A demuxed packet, owned. Thread: any (one owner).
extern "C" {
#include <libavcodec/packet.h>
}
#include <memory>

namespace vigil::client {

struct PacketFree {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
using PacketPtr = std::unique_ptr<AVPacket, PacketFree>;

}  // namespace vigil::client
