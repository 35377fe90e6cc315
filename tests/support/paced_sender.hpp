#pragma once
// What a well-behaved recorder does with the server's policing (the Xtream client proxy): it
// sends script frames in bursts, a ping after each as a barrier (every answer to the burst comes
// before its pong), and from the first refused packet — rate_exceeded: the cycle's half is full;
// the packets after it are then out of order — it sends again once a cycle has taken data.
// Shared by the wire-level recording tests. Errors: Catch2 assertions.
#include <cstdint>
#include <string>

#include "client/wire/wire_client.hpp"
#include "tests/support/vigild_process.hpp"

namespace vigil::test {

struct SendCounts {
  std::uint64_t acked = 0;           // last sequence acknowledged as durable
  std::uint64_t bursts_refused = 0;  // bursts the server policed
  std::uint64_t rate_refusals = 0, other_refusals = 0;
};

class PacedSender {
 public:
  PacedSender(client::WireClient& c, std::uint64_t stream) : c_(c), stream_(stream) {}
  // Sends script frames from where it left off up to LAST (stream's frames, media_packet), in
  // bursts of BURST; returns once every one was taken (not necessarily durable yet).
  void send_until(std::uint64_t last, std::uint64_t burst = 40);
  // Half-closes the session and reads acknowledgements to its end.
  void finish();
  // A keyframe every FRAMES frames from frame 1 (default 25, media_packet's; 1: every frame).
  void set_gop(std::uint64_t frames) noexcept { gop_ = frames; }
  const SendCounts& counts() const noexcept { return counts_; }
  std::uint64_t sent() const noexcept { return next_ - 1; }

 private:
  void take(const client::Received& r);

  client::WireClient& c_;
  std::uint64_t stream_;
  std::uint64_t next_ = 1;
  std::uint64_t gop_ = 25;
  SendCounts counts_;
};

// The tests' one record-until-acknowledged: a session of camera NAME on D declared at RATE_BPS,
// TOTAL script frames sent by a PacedSender in bursts of BURST, half-closed and read to its end.
// CHECKs that every frame was acknowledged as durable; REQUIREs the admission.
struct RecordedSession {
  std::uint64_t stream = 0;  // the stream id (script frames carry it)
  SendCounts counts;
};
RecordedSession record_acked(const VigildProcess& d, const std::string& name, std::uint64_t total,
                             std::uint64_t burst = 40, std::uint64_t rate_bps = 2'000'000);

}  // namespace vigil::test
