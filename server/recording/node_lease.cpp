#include "server/recording/node_lease.hpp"

namespace vigil::server {

void NodeLease::renewed(Clock::time_point sent, Clock::time_point now) {
  // A renewal answered after the previous trust had lapsed does not continue the run: in between
  // the lease may have expired, and other nodes may have swept it.
  if (!connected_since_ || !trusted(now)) connected_since_ = sent;
  trusted_until_ = sent + times_.lease - times_.margin;
}

void NodeLease::failed() { connected_since_.reset(); }

}  // namespace vigil::server
