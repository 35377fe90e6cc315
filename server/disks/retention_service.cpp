#include "server/disks/retention_service.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <pqxx/pqxx>

#include "common/log.hpp"
#include "catalog/conninfo.hpp"
#include "catalog/evidence_locks.hpp"
#include "catalog/retention_rows.hpp"
#include "server/disks/retention_reserve.hpp"
#include "server/disks/segment_reclaim.hpp"
#include "storage/retention.hpp"

namespace vigil::server {
namespace {

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

RetentionService::RetentionService(std::string conninfo, std::span<const std::unique_ptr<Disk>> disks,
                                   RetentionOptions options)
    : conninfo_(catalog::with_session_limits(conninfo, 2)),
      disks_(disks),
      options_(options),
      thread_([this](std::stop_token st) { run(st); }) {}

RetentionService::~RetentionService() {
  thread_.request_stop();
  cv_.notify_all();
}

std::uint64_t RetentionService::reserve_extents(Disk& disk) {
  const auto& vol = *disk.volume->volume;
  const auto r =
      retention_reserve(vol.extent_count(), vol.extent_bytes(), options_.reserve_seconds, DiskSet::ingest_rate(disk));
  if (r.wanted > r.kept && capped_.insert(&disk).second) {
    log::warn("the retention reserve is more than a quarter of the volume; a quarter is kept free",
              {{"volume", disk.volume->path.string()},
               {"reserve_extents", r.wanted},
               {"kept_extents", r.kept},
               {"reserve_seconds", options_.reserve_seconds}});
  }
  return r.kept;
}

void RetentionService::run(std::stop_token stop) {
  auto last_full = std::chrono::steady_clock::now() - options_.interval;  // a full pass at start
  while (!stop.stop_requested()) {
    const bool full = std::chrono::steady_clock::now() - last_full >= options_.interval;
    if (full) last_full = std::chrono::steady_clock::now();
    for (const auto& d : disks_) {
      if (stop.stop_requested()) return;
      if (!d->volume || !d->io) continue;
      if (auto* m = d->io->metrics()) {
        m->free_bytes(static_cast<double>(d->io->free_extents() * d->volume->volume->extent_bytes()));
      }
      const bool low = d->io->free_extents() < reserve_extents(*d);
      if (!low && d->no_room.exchange(false)) {
        log::info("volume has room again for new recordings", {{"volume", d->volume->path.string()}});
      }
      if (!full && !low) continue;
      try {
        // One pass per tick: it frees what the reserve needs, and the free count the IO thread
        // publishes is only fresh again after its next cycle.
        if (options_.reachable && !options_.reachable()) {
          if (low) pass_without_catalog(*d, stop);
        } else {
          pass(*d, full, stop);
        }
      } catch (const std::exception& e) {
        if (auto* m = d->io->metrics()) m->retention_failed();
        log::warn("retention pass failed; retried at the next tick",
                  {{"volume", d->volume->path.string()}, {"error", e.what()}});
      }
    }
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, stop, options_.tick, [] { return false; });
  }
}

bool RetentionService::pass(Disk& disk, bool full, std::stop_token stop) {
  pqxx::connection conn(conninfo_);
  storage::RetentionPolicy policy;
  storage::RetentionInput in;
  std::vector<std::uint64_t> chosen;
  {
    pqxx::work tx(conn);
    auto view = catalog::retention_view(tx, disk.volume->volume_id, now_us(), 4 * options_.max_segments_per_pass, full,
                                        options_.day_us);
    policy.per_stream = std::move(view.per_stream);
    in.closed = std::move(view.closed);
    in.locks = catalog::active_evidence_locks(tx, disk.volume->volume_id);
  }
  known_[&disk] = {in.closed, in.locks};
  // Without the catalog, retention keeps the reserve only: quotas, like ages, wait for it.
  for (auto& c : known_[&disk].closed) c.over_quota = false;
  in.extent_bytes = disk.volume->volume->extent_bytes();
  in.now_us = now_us();
  // The reserve, within its bounds (see reserve_extents): the per-stream choice is topped up with
  // the next oldest unlocked segments until it is free.
  const std::uint64_t need = reserve_extents(disk);
  in.free_extents = disk.io->free_extents();
  in.admitted_ingest = DiskSet::ingest_rate(disk);
  if (!full) policy.per_stream.clear();  // a space pass: ages wait for the next full one
  chosen = choose(policy, in, need);
  // Short of the reserve with nothing left that may go (all locked or still being written):
  // recording admission refuses new streams on this disk until space comes back.
  const bool no_room = chosen.empty() && in.free_extents < need;
  if (disk.no_room.exchange(no_room) != no_room) {
    if (no_room) {
      log::warn("volume full of locked or open data: new recordings are refused until space is freed",
                {{"volume", disk.volume->path.string()}, {"free_extents", in.free_extents}, {"reserve_extents", need}});
    } else {
      log::info("volume has room again for new recordings", {{"volume", disk.volume->path.string()}});
    }
  }
  if (chosen.empty()) return false;

  // 1. The catalog no longer offers them (committed before any extent is freed).
  std::vector<std::uint64_t> marked;
  {
    pqxx::work tx(conn);
    marked = catalog::mark_deleting(tx, chosen);
    tx.commit();
  }
  if (marked.empty()) return false;
  // 2. The IO thread frees their extents in a cycle's slack. It owns the volume's allocation.
  const auto reclaimed = reclaim_on_io_thread(disk, marked, stop);
  if (!reclaimed) return false;
  const ReclaimOutcome& out = *reclaimed;
  // 3. Their rows go (extents and GOP index with them).
  {
    pqxx::work tx(conn);
    catalog::finish_deleting(tx, out.done);
    tx.commit();
  }
  reclaimed_.insert(out.done.begin(), out.done.end());
  if (auto* m = disk.io->metrics()) m->reclaimed(out.done.size(), out.bytes);
  log::info("retention reclaimed segments", {{"volume", disk.volume->path.string()},
                                             {"segments", out.done.size()},
                                             {"bytes", out.bytes},
                                             {"free_extents", disk.io->free_extents()},
                                             {"reason", full ? "age or space" : "space"}});
  if (!out.error.empty()) throw std::runtime_error("reclaiming " + out.error);
  return !out.done.empty();
}

}  // namespace vigil::server

namespace vigil::server {

std::vector<std::uint64_t> RetentionService::choose(const storage::RetentionPolicy& policy,
                                                    const storage::RetentionInput& in, std::uint64_t need) const {
  // choose_reclaim applies the per-stream limits (ages, budgets) only: the free-space reserve is
  // NEED, the bounded one (never more than a quarter of the volume). Its own, unbounded reserve —
  // seconds of a fast disk's admitted ingest on a small volume — would reclaim every closed segment.
  storage::RetentionPolicy limits_only = policy;
  limits_only.reserve_seconds = 0;
  auto chosen = storage::choose_reclaim(limits_only, in);
  std::uint64_t freed = in.free_extents;
  std::map<std::uint64_t, std::uint64_t> extents_of;
  for (const auto& s : in.closed) extents_of[s.segment_id] = s.extent_count;
  for (auto id : chosen) freed += extents_of[id];
  if (freed < need) {
    // Oldest unlocked first, as choose_reclaim orders them.
    std::vector<storage::ClosedSegment> rest;
    for (const auto& s : in.closed) {
      if (std::find(chosen.begin(), chosen.end(), s.segment_id) == chosen.end() && !storage::is_locked(s, in.locks)) {
        rest.push_back(s);
      }
    }
    std::sort(rest.begin(), rest.end(), [](const auto& a, const auto& b) {
      return a.start_us != b.start_us ? a.start_us < b.start_us : a.segment_id < b.segment_id;
    });
    for (const auto& s : rest) {
      if (freed >= need) break;
      chosen.push_back(s.segment_id);
      freed += s.extent_count;
    }
  }
  if (chosen.size() > options_.max_segments_per_pass) chosen.resize(options_.max_segments_per_pass);
  return chosen;
}

bool RetentionService::pass_without_catalog(Disk& disk, std::stop_token stop) {
  auto it = known_.find(&disk);
  if (it == known_.end() || !options_.batcher) {
    if (warned_unknown_.insert(&disk).second) {
      log::warn("retention cannot run: the catalog is down and this volume was never read from it",
                {{"volume", disk.volume->path.string()}});
    }
    return false;
  }
  auto& known = it->second;
  storage::RetentionPolicy policy;  // no ages: they wait for the catalog
  policy.reserve_seconds = options_.reserve_seconds;
  storage::RetentionInput in;
  in.closed = known.closed;
  // And what was closed since (its rows wait on the batcher, ahead of the reclaim's own).
  for (const auto& s : disk.recently_closed()) {
    const bool listed = std::any_of(in.closed.begin(), in.closed.end(),
                                    [&](const storage::ClosedSegment& k) { return k.segment_id == s.segment_id; });
    if (!listed && !reclaimed_.contains(s.segment_id)) in.closed.push_back(s);
  }
  in.locks = known.locks;
  in.extent_bytes = disk.volume->volume->extent_bytes();
  in.now_us = now_us();
  in.free_extents = disk.io->free_extents();
  in.admitted_ingest = DiskSet::ingest_rate(disk);
  const auto chosen = choose(policy, in, reserve_extents(disk));
  if (chosen.empty()) return false;

  // 1. "Being reclaimed", durable in the batcher's spool before any extent is freed: the catalog
  // follows (at reconnection, or at the next start before recovery) whatever happens next.
  const auto seq = options_.batcher->enqueue(catalog::ReclaimRow{.segment_ids = chosen, .freed = false});
  options_.batcher->spool_soon();
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!options_.batcher->durable(seq)) {
    if (stop.stop_requested() || std::chrono::steady_clock::now() >= until) {
      // Not freed: the row marks them 'deleting' when it commits; the next start reclaims them.
      log::warn("retention without the catalog: the reclaim could not be made durable; nothing freed",
                {{"volume", disk.volume->path.string()}, {"segments", chosen.size()}});
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // 2. The IO thread frees the extents.
  const auto reclaimed = reclaim_on_io_thread(disk, chosen, stop);
  if (!reclaimed) return false;
  const ReclaimOutcome& out = *reclaimed;
  // 3. Their rows go, after the marking, in the batcher's order.
  options_.batcher->enqueue(catalog::ReclaimRow{.segment_ids = out.done, .freed = true});
  std::erase_if(known.closed, [&](const storage::ClosedSegment& s) {
    return std::find(out.done.begin(), out.done.end(), s.segment_id) != out.done.end();
  });
  reclaimed_.insert(out.done.begin(), out.done.end());
  if (auto* m = disk.io->metrics()) m->reclaimed(out.done.size(), out.bytes);
  log::info("retention reclaimed segments without the catalog (as it last saw the volume and its locks)",
            {{"volume", disk.volume->path.string()},
             {"segments", out.done.size()},
             {"bytes", out.bytes},
             {"free_extents", disk.io->free_extents()}});
  if (!out.error.empty()) throw std::runtime_error("reclaiming " + out.error);
  return !out.done.empty();
}

}  // namespace vigil::server
