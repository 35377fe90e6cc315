#pragma once
// What a well-behaved recorder does with the server's policing (the Xtream client proxy): it
// sends script frames in bursts, a ping after each as a barrier (every answer to the burst comes
// before its pong), and from the first refused packet — rate_exceeded: the cycle's half is full;
// the packets after it are then out of order — it sends again once a cycle has taken data.
// Shared by the wire-level recording tests. Errors: Catch2 assertions.
#include <cstdint>

#include "client/wire/wire_client.hpp"

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
  const SendCounts& counts() const noexcept { return counts_; }
  std::uint64_t sent() const noexcept { return next_ - 1; }

 private:
  void take(const client::Received& r);

  client::WireClient& c_;
  std::uint64_t stream_;
  std::uint64_t next_ = 1;
  SendCounts counts_;
};

}  // namespace vigil::test
