#include "server/disks/scrub_service.hpp"

#include <map>
#include <optional>
#include <pqxx/pqxx>

#include "catalog/retention_rows.hpp"
#include "catalog/scrub_rows.hpp"
#include "common/log.hpp"
#include "server/disks/segment_fetch.hpp"
#include "server/disks/segment_reclaim.hpp"
#include "storage/segment_verify.hpp"

namespace vigil::server {

using Clock = std::chrono::steady_clock;

ScrubService::ScrubService(std::string conninfo, std::span<const std::unique_ptr<Disk>> disks, ScrubOptions options)
    : conninfo_(std::move(conninfo)),
      disks_(disks),
      options_(options),
      thread_([this](std::stop_token s) { run(s); }) {}

ScrubService::~ScrubService() {
  thread_.request_stop();
  cv_.notify_all();
}

bool ScrubService::wait_until(Clock::time_point when, std::stop_token stop) {
  std::unique_lock lock(mu_);
  return !cv_.wait_until(lock, stop, when, [] { return false; });
}

void ScrubService::run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    // One epoch: what every volume holds now, spread evenly over the epoch's length, disks in
    // turn, so each volume is verified at the same pace whatever the others hold.
    const auto start = Clock::now();
    std::vector<std::pair<Disk*, catalog::ScrubTarget>> work;
    std::map<Disk*, std::pair<std::size_t, std::size_t>> progress;  // done, total
    try {
      pqxx::connection conn(conninfo_);
      std::vector<std::vector<catalog::ScrubTarget>> per_disk;
      for (const auto& d : disks_) {
        pqxx::work tx(conn);
        per_disk.push_back(catalog::scrub_targets(tx, d->volume->volume_id));
        progress[d.get()] = {0, per_disk.back().size()};
      }
      for (std::size_t i = 0;; ++i) {
        bool any = false;
        for (std::size_t d = 0; d < per_disk.size(); ++d) {
          if (i < per_disk[d].size()) {
            work.emplace_back(disks_[d].get(), std::move(per_disk[d][i]));
            any = true;
          }
        }
        if (!any) break;
      }
    } catch (const std::exception& e) {
      log::warn("scrub: cannot read the catalog; retried next epoch", {{"error", e.what()}});
    }
    for (const auto& [disk, p] : progress) {
      if (auto* m = disk->io->metrics()) m->scrub_progress(p.second == 0 ? 1.0 : 0.0);
    }
    std::size_t promoted = 0;
    const auto slot_start = [&](std::size_t i) {
      return start + options_.epoch * static_cast<std::int64_t>(i) / static_cast<std::int64_t>(work.size());
    };
    for (std::size_t i = 0; i < work.size(); ++i) {
      if (!wait_until(slot_start(i), stop)) return;
      auto& [disk, target] = work[i];
      // Due by the end of its slot: the epoch's pace holds whether or not the disk has slack.
      if (!disk->io->volume_failed()) promoted += scrub(*disk, target, slot_start(i + 1), stop) ? 1 : 0;
      if (stop.stop_requested()) return;
      auto& p = progress[disk];
      ++p.first;
      if (auto* m = disk->io->metrics())
        m->scrub_progress(static_cast<double>(p.first) / static_cast<double>(p.second));
    }
    for (const auto& entry : progress) {
      if (auto* m = entry.first->io->metrics()) m->scrub_epoch_done();
    }
    if (promoted > 0) {
      log::warn(
          "scrub: reads outlived their slot in the epoch and were promoted to interactive requests (the disks "
          "have too little slack for the scrub's target age)",
          {{"promoted", promoted}, {"segments", work.size()}});
    }
    if (!wait_until(start + options_.epoch, stop)) return;
  }
}

bool ScrubService::scrub(Disk& disk, const catalog::ScrubTarget& t, Clock::time_point due, std::stop_token stop) {
  ReadDeadline deadline{.promote_at = due};
  auto read = read_and_verify(disk, t, stop, &deadline);
  if (deadline.promoted) {
    if (auto* m = disk.io->metrics()) m->scrub_promoted();
  }
  if (!read) return deadline.promoted;  // stopped
  if (!*read) {
    log::warn("scrub: read failed; retried next epoch",
              {{"segment", t.segment_id}, {"volume", disk.volume->path.string()}, {"error", read->error().message()}});
    return deadline.promoted;
  }
  const std::uint64_t bytes = (*read)->bytes;
  const storage::SegmentCheck& check = (*read)->check;
  const bool damaged = !(*read)->intact(t.checksum_crc32c);
  bool found = false;
  if (damaged) {
    try {
      pqxx::connection conn(conninfo_);
      pqxx::work tx(conn);
      // Reclaimed while it was read (retention marks it 'deleting' before freeing an extent):
      // what was read may be another segment's data, not damage.
      if (!catalog::segment_still_closed(tx, t.segment_id)) return deadline.promoted;
      for (const auto& d : check.damage) {
        const std::uint64_t offset = t.extent_offsets[d.ordinal] + d.offset_in_extent;
        const std::string detail =
            catalog::corruption_gap_detail(t.segment_id,
                                           disk.volume->path.string() + " at offset " + std::to_string(offset),
                                           storage::scan_stop_name(d.why));
        found |= catalog::record_corruption_gap(tx, t.stream_id, d.from_us, d.to_us, detail);
        log::error("scrub found a damaged segment", {{"segment", t.segment_id},
                                                     {"volume", disk.volume->path.string()},
                                                     {"offset", offset},
                                                     {"stream", t.stream_id},
                                                     {"why", storage::scan_stop_name(d.why)},
                                                     {"from_us", d.from_us},
                                                     {"to_us", d.to_us}});
      }
      if (check.damage.empty()) {
        // Every record valid, yet not the records written: the whole segment is in doubt.
        found |= catalog::record_corruption_gap(tx, t.stream_id, t.start_us, t.end_us,
                                                catalog::corruption_gap_detail(t.segment_id, disk.volume->path.string(),
                                                                               "segment checksum mismatch"));
        log::error("scrub found a segment checksum mismatch",
                   {{"segment", t.segment_id},
                    {"volume", disk.volume->path.string()},
                    {"offset", t.extent_offsets.empty() ? 0 : t.extent_offsets[0]},
                    {"stream", t.stream_id}});
      }
      tx.commit();
    } catch (const std::exception& e) {
      log::warn("scrub: cannot record a damaged segment; retried next epoch",
                {{"segment", t.segment_id}, {"error", e.what()}});
      return deadline.promoted;
    }
  }
  if (auto* m = disk.io->metrics()) m->scrubbed(bytes, found);
  // Found now or in an earlier epoch (a copy may have been made or an archive configured since).
  if (damaged && options_.repair_from_archive) repair(disk, t, stop);
  return deadline.promoted;
}

void ScrubService::repair(Disk& disk, const catalog::ScrubTarget& t, std::stop_token stop) {
  try {
    pqxx::connection conn(conninfo_);
    std::optional<catalog::ArchiveRepair> switched;
    {
      // 1. Committed before any extent is freed: the segment is the copy's from here on, whole,
      // so its corruption gaps go with the same commit (a crash now is finished by recovery).
      pqxx::work tx(conn);
      switched = catalog::begin_archive_repair(tx, t.segment_id);
      tx.commit();
    }
    if (!switched) return;  // no verified copy (or no longer closed): the gap stays
    // 2. The damaged local copy's space, freed on the IO thread as retention frees it.
    const auto freed = reclaim_on_io_thread(disk, {t.segment_id}, stop);
    if (!freed) return;  // stopped: left 'deleting', which the next start finishes
    if (!freed->error.empty()) {
      log::error("scrub: cannot free a repaired segment's damaged extents; the next start finishes it",
                 {{"segment", t.segment_id}, {"volume", disk.volume->path.string()}, {"error", freed->error}});
      return;
    }
    {
      // 3. 'archived': readers fetch its GOPs from the copy by Range GETs.
      pqxx::work tx(conn);
      catalog::finish_deleting(tx, {t.segment_id});
      tx.commit();
    }
    log::warn("scrub repaired a damaged segment: it is read from its verified archive copy from now on",
              {{"segment", t.segment_id},
               {"volume", disk.volume->path.string()},
               {"stream", t.stream_id},
               {"from_us", switched->start_us},
               {"to_us", switched->end_us},
               {"bucket", switched->bucket},
               {"key", switched->object_key},
               {"gaps_removed", switched->gaps_removed},
               {"freed_bytes", freed->bytes}});
    if (auto* m = disk.io->metrics()) m->scrub_repaired();
  } catch (const std::exception& e) {
    // Before the first commit: retried at the next epoch that finds the damage; after it: the
    // segment is 'deleting', which the next start's recovery finishes as 'archived'.
    log::warn("scrub: cannot repair a damaged segment from its archive copy",
              {{"segment", t.segment_id}, {"error", e.what()}});
  }
}

}  // namespace vigil::server
