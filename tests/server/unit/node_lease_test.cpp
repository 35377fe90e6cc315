// This node's own view of its lease (server/recording/node_lease.hpp): trusted until the instant
// its last renewal was sent plus the lease minus the margin, whatever the catalog's clock says;
// sweeping other nodes only after two leases of unbroken renewals, counted again after a failed
// renewal or one that came back after the trust had lapsed.
#include <catch2/catch_test_macros.hpp>

#include "server/recording/node_lease.hpp"

using vigil::server::NodeLease;
using namespace std::chrono_literals;

TEST_CASE("a node trusts its lease from the renewal's sending, and sweeps only after two leases connected", "[nodes]") {
  NodeLease lease({.heartbeat = 1000ms, .lease = 4000ms, .margin = 500ms});
  const NodeLease::Clock::time_point t0{};
  CHECK_FALSE(lease.trusted(t0));
  CHECK_FALSE(lease.may_sweep(t0));

  // A renewal answered late still counts from when it was sent.
  lease.renewed(t0, t0 + 1000ms);
  CHECK(lease.trusted(t0 + 3499ms));
  CHECK_FALSE(lease.trusted(t0 + 3500ms));
  CHECK_FALSE(lease.may_sweep(t0 + 1000ms));

  // Renewed every second: after two leases (8 s) of them, the node may sweep.
  for (int s = 1; s <= 8; ++s) lease.renewed(t0 + s * 1000ms, t0 + s * 1000ms + 10ms);
  CHECK_FALSE(lease.may_sweep(t0 + 7999ms));
  CHECK(lease.may_sweep(t0 + 8010ms));

  // A failed renewal (the catalog went away): no sweeping until two leases of renewals again,
  // though the lease itself is still trusted to its end.
  lease.failed();
  CHECK(lease.trusted(t0 + 9000ms));
  CHECK_FALSE(lease.may_sweep(t0 + 9000ms));
  lease.renewed(t0 + 9000ms, t0 + 9010ms);
  CHECK_FALSE(lease.may_sweep(t0 + 16999ms));
  for (int s = 10; s <= 17; ++s) lease.renewed(t0 + s * 1000ms, t0 + s * 1000ms + 10ms);
  CHECK(lease.may_sweep(t0 + 17010ms));

  // A renewal that comes back after the trust lapsed (a catalog stall of 5 s): every lease may
  // have expired meanwhile, so the run starts again; and a renewal slower than the lease leaves
  // nothing to trust.
  lease.renewed(t0 + 23000ms, t0 + 23010ms);
  CHECK(lease.trusted(t0 + 23010ms));
  CHECK_FALSE(lease.may_sweep(t0 + 26000ms));  // trusted, but connected only 3 s
  lease.renewed(t0 + 24000ms, t0 + 29000ms);
  CHECK_FALSE(lease.trusted(t0 + 29000ms));
  CHECK_FALSE(lease.may_sweep(t0 + 29000ms));
}
