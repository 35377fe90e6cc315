#pragma once
// What a recorder session reads: the packets of one stream of its input, in that stream's time
// base. The input's video (InputDemuxer) and its audio (AudioTrack, which the demuxer feeds) are
// both sources, each recorded as its own stream by its own RecorderSession.
// Thread: next() on the reader's thread (live_reader.hpp); interrupt() from any thread; the rest
// from the owner's. Errors: next() returns null at the end.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "client/cli/packet.hpp"

namespace vigil::client {

class PacketSource {
 public:
  virtual ~PacketSource() = default;

  // The next packet (read-ahead ones first); null at the end.
  virtual PacketPtr next() = 0;
  // The read under way and every later one end now; next() returns null.
  virtual void interrupt() = 0;
  // A network source: it does not wait for the recorder.
  virtual bool live() const = 0;
  // Payload bytes read ahead and not yet handed out by next().
  virtual std::size_t ahead_bytes() const = 0;
  virtual double time_base_s() const = 0;
  // The first packet's pts, if it had one (the recorder's clock is pinned to it).
  virtual std::optional<std::int64_t> first_pts() const = 0;

  // A timestamp in the stream's time base, in us.
  std::int64_t to_us(std::int64_t ts) const {
    return static_cast<std::int64_t>(static_cast<double>(ts) * time_base_s() * 1e6);
  }
};

}  // namespace vigil::client
