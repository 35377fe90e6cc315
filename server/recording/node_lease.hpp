#pragma once
// This node's lease as the node itself may trust it (docs/nodes.md). The lease lives in the
// catalog's `nodes` row, measured on PostgreSQL's clock; the node cannot read that clock, so it
// trusts its lease only until the monotonic instant its last successful heartbeat was *sent* plus
// the lease minus a margin (the row may have been written at any moment after sending). Past
// that the node claims nothing and sweeps nothing; what it records it keeps recording (the volume
// is the truth). It sweeps other nodes' expired leases only once it has itself been connected,
// heartbeat after heartbeat without a failure or a lapse, for two leases: after a catalog outage
// every lease looks expired, and the others need a heartbeat to renew theirs.
// Thread: the camera manager's only. Pure bookkeeping: no clock of its own, no errors.
#include <chrono>
#include <optional>

namespace vigil::server {

struct LeaseTimes {
  std::chrono::milliseconds heartbeat{1000};  // how often the node renews its lease
  std::chrono::milliseconds lease{4000};      // how long a renewal lasts on PostgreSQL's clock
  std::chrono::milliseconds margin{500};      // trusted this much less than the lease
};

class NodeLease {
 public:
  using Clock = std::chrono::steady_clock;
  explicit NodeLease(LeaseTimes times) : times_(times) {}

  // A heartbeat sent at SENT committed; NOW: when its answer came.
  void renewed(Clock::time_point sent, Clock::time_point now);
  // A heartbeat failed (or the catalog could not be reached).
  void failed();

  // Whether the node may still act on its lease at NOW (claim cameras).
  bool trusted(Clock::time_point now) const { return trusted_until_ && now < *trusted_until_; }
  // Whether the node may expire other nodes' leases at NOW.
  bool may_sweep(Clock::time_point now) const {
    return trusted(now) && connected_since_ && now - *connected_since_ >= 2 * times_.lease;
  }
  const LeaseTimes& times() const { return times_; }

 private:
  LeaseTimes times_;
  std::optional<Clock::time_point> trusted_until_;
  std::optional<Clock::time_point> connected_since_;  // the first heartbeat of the current unbroken run
};

}  // namespace vigil::server
