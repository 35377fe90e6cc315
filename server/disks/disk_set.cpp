#include "server/disks/disk_set.hpp"

#include <algorithm>
#include <chrono>
#include <pqxx/pqxx>

#include "admission/playback_share.hpp"
#include "catalog/profiles.hpp"
#include "common/log.hpp"

namespace vigil::server {

double Disk::cycle_s() const { return std::chrono::duration<double>(io->scheduler().config().cycle).count(); }

proto::Refuse refuse(proto::RefuseReason code, std::string reason) {
  proto::Refuse r;
  r.set_reason(std::move(reason));
  r.set_reason_code(code);
  r.set_largest_rate_bps(0);
  return r;
}

proto::Refuse to_refuse(const Refusal& refusal) {
  proto::RefuseReason code = proto::REFUSE_REASON_UNSPECIFIED;
  switch (refusal.cause) {
    case RefusalCause::no_disk:
    case RefusalCause::cycle_full: code = proto::REFUSE_REASON_DISK_FULL_LOAD; break;
    case RefusalCause::not_profiled:
    case RefusalCause::model_paused: code = proto::REFUSE_REASON_PROFILE_STALE; break;
    case RefusalCause::no_room:
    case RefusalCause::volume_failed: code = proto::REFUSE_REASON_NO_SPACE; break;
  }
  auto r = refuse(code, refusal.reason);
  r.set_largest_rate_bps(static_cast<std::uint64_t>(refusal.largest_rate.bps()));
  return r;
}

DiskSet::DiskSet(std::vector<std::unique_ptr<Disk>> disks, catalog::Batcher& batcher)
    : disks_(std::move(disks)), batcher_(batcher) {
  for (const auto& d : disks_) {
    std::lock_guard lock(d->mu);
    publish_admitted(*d);
  }
}

namespace {

// What a viewer is told when a recording needs its playback's share.
constexpr const char* kEndedForRecording =
    "ended: a recording needed this disk's time (recording comes first; the playbacks' share is bounded by "
    "--playback-share): open the playback again later";

}  // namespace

std::vector<std::function<void()>> DiskSet::end_playbacks(Disk& disk, const std::vector<std::uint64_t>& ended) {
  std::vector<std::function<void()>> tell;
  for (const auto id : ended) {
    std::erase_if(disk.admitted, [&](const auto& s) { return s.id == id; });
    if (auto* m = disk.io->metrics()) m->playback_released(DiskMetrics::Release::preempted);
    if (auto it = disk.on_ended.find(id); it != disk.on_ended.end()) {
      tell.push_back([fn = std::move(it->second)] { fn(kEndedForRecording); });
      disk.on_ended.erase(it);
    }
  }
  if (!ended.empty()) {
    log::warn("playbacks ended: a recording needed their disk time (recording comes first)",
              {{"volume", disk.volume->path.string()}, {"ended", ended.size()}});
  }
  return tell;
}

std::int64_t DiskSet::headroom_bps() {
  double total_bps = 0;
  for (auto& d : disks_) {
    const auto* adm = d->io->admission();
    if (!adm || d->io->volume_failed() || d->no_room.load(std::memory_order_relaxed)) continue;
    admission::StreamDemand probe;  // a recording; its rate does not matter: max_rate is the answer
    probe.peak_rate = probe.average_rate = Rate::from_bps(1'000'000);
    std::lock_guard lock(d->mu);
    total_bps += admission::decide_shared(*adm, d->admitted, probe).decision.max_rate.bps();
  }
  return static_cast<std::int64_t>(total_bps);
}

std::variant<Admitted, Refusal> DiskSet::admit(admission::StreamDemand demand, DiskMetrics::Kind kind,
                                               const std::optional<std::string>& camera, Disk* only, EndedFn on_ended) {
  // Which refusal a client gets when no disk admits: a decision on load beats a disk without
  // room, which beats a disk without a profile (the most specific thing that could change).
  std::optional<Refusal> decided, no_room, not_profiled, failed;
  // Placement: of the disks that admit the stream, the one with the largest share of its
  // real-time budget left afterwards, so load spreads over the node's disks instead of filling
  // them in configuration order (ties: configuration order). Every disk considered stays locked
  // until the choice is made, always in configuration order, so the decision still holds.
  std::vector<std::unique_lock<std::mutex>> locks;
  Disk* best = nullptr;
  admission::SharedDecision best_decision;
  double best_left = -1;
  for (auto& d : disks_) {
    if (only && d.get() != only) continue;
    if (d->io->volume_failed()) {
      // Out of service: its streams are moving to the other volumes; nothing new goes to it.
      failed = Refusal{RefusalCause::volume_failed,
                       "the volume " + d->volume->path.string() + " failed (" + d->io->failure_reason() + ")",
                       {}};
      continue;
    }
    const auto* adm = d->io->admission();
    if (!adm) {
      not_profiled = Refusal{RefusalCause::not_profiled,
                             "the disk is not profiled: run `vigil profile` and start vigild with --profile",
                             {}};
      continue;
    }
    locks.emplace_back(d->mu);
    if (demand.write && d->no_room.load(std::memory_order_relaxed)) {
      no_room = Refusal{RefusalCause::no_room,
                        "the volume " + d->volume->path.string() +
                            " has no room: it is short of its free-space reserve and everything on it is "
                            "evidence-locked or still being written (release locks, or add a volume)",
                        {}};
      continue;
    }
    refresh_measured(*d);
    auto shared = admission::decide_shared(*adm, d->admitted, demand);
    auto& decision = shared.decision;
    if (!decision.admitted) {
      log_decision(*d, decision, kind, std::nullopt, camera);
      const auto cause = decision.cause == admission::RefuseCause::model_paused ? RefusalCause::model_paused
                                                                                : RefusalCause::cycle_full;
      decided = Refusal{cause, decision.reason, decision.max_rate};
      continue;
    }
    const double left = decision.budget_s > 0 ? (decision.budget_s - decision.predicted_busy_s) / decision.budget_s : 0;
    // A disk where no playback has to end beats one where some would.
    const auto better = [&] {
      if (shared.ended.size() != best_decision.ended.size()) return shared.ended.size() < best_decision.ended.size();
      return left > best_left;
    };
    if (!best || better()) {
      best = d.get();
      best_decision = std::move(shared);
      best_left = left;
    }
  }
  if (best) {
    auto tell = end_playbacks(*best, best_decision.ended);
    demand.id = best->next_demand++;
    best->admitted.push_back(demand);
    if (on_ended) best->on_ended.emplace(demand.id, std::move(on_ended));
    publish_admitted(*best);
    locks.clear();
    for (auto& t : tell) t();
    return Admitted{best, demand, std::move(best_decision.decision)};
  }
  if (decided) return *decided;
  if (no_room) return *no_room;
  if (failed) return *failed;
  if (not_profiled) return *not_profiled;
  return Refusal{RefusalCause::no_disk, "no disk is configured (start vigild with --volume)", {}};
}

void DiskSet::log_admitted(const Admitted& a, DiskMetrics::Kind kind, std::optional<std::int64_t> stream_id,
                           const std::optional<std::string>& camera) {
  log_decision(*a.disk, a.decision, kind, stream_id, camera);
}

std::variant<admission::Decision, Refusal> DiskSet::readmit(Disk& disk, std::uint64_t demand_id,
                                                            admission::StreamDemand wanted, DiskMetrics::Kind kind,
                                                            std::optional<std::int64_t> stream_id,
                                                            const std::optional<std::string>& camera) {
  std::unique_lock lock(disk.mu);
  const auto* adm = disk.io->admission();
  auto it = std::find_if(disk.admitted.begin(), disk.admitted.end(), [&](const auto& s) { return s.id == demand_id; });
  if (!adm || it == disk.admitted.end()) {
    return Refusal{RefusalCause::not_profiled, "the stream is not admitted on a profiled disk", {}};
  }
  refresh_measured(disk);
  // Decided against every other stream of the disk, as if this one arrived now at WANTED.
  std::vector<admission::StreamDemand> others;
  for (const auto& s : disk.admitted) {
    if (s.id != demand_id) others.push_back(s);
  }
  wanted.id = it->id;
  wanted.io_id = it->io_id;
  auto shared = admission::decide_shared(*adm, others, wanted);
  auto& decision = shared.decision;
  log_decision(disk, decision, kind, stream_id, camera);
  if (!decision.admitted) {
    const auto cause =
        decision.cause == admission::RefuseCause::model_paused ? RefusalCause::model_paused : RefusalCause::cycle_full;
    return Refusal{cause, decision.reason, decision.max_rate};
  }
  *it = wanted;  // before end_playbacks: it erases from the same vector
  auto tell = end_playbacks(disk, shared.ended);
  publish_admitted(disk);
  lock.unlock();
  for (auto& t : tell) t();
  return decision;
}

void DiskSet::release(Disk& disk, std::uint64_t demand_id) {
  std::lock_guard lock(disk.mu);
  std::erase_if(disk.admitted, [&](const auto& s) { return s.id == demand_id; });
  disk.on_ended.erase(demand_id);
  publish_admitted(disk);
}

void DiskSet::log_decision(const Disk& disk, const admission::Decision& decision, DiskMetrics::Kind kind,
                           std::optional<std::int64_t> stream_id, const std::optional<std::string>& camera) {
  if (auto* m = disk.io->metrics()) m->decision(kind, decision.admitted);
  batcher_.enqueue(catalog::AdmissionDecisionRow{.decision = decision,
                                                 .disk_id = disk.disk_id,
                                                 .stream_id = stream_id,
                                                 .cycle_s = disk.cycle_s(),
                                                 .camera = camera});
}

void Disk::segment_closed(const storage::ClosedSegment& s) {
  std::lock_guard lock(closed_mu_);
  closed_.push_back(s);
  if (closed_.size() > kRecentlyClosed) closed_.pop_front();
}

std::vector<storage::ClosedSegment> Disk::recently_closed() const {
  std::lock_guard lock(closed_mu_);
  return {closed_.begin(), closed_.end()};
}

Rate DiskSet::ingest_rate(Disk& disk) {
  std::lock_guard lock(disk.mu);
  Rate ingest;
  for (const auto& s : disk.admitted) {
    if (s.write) ingest += s.peak_rate;
  }
  return ingest;
}

void DiskSet::refresh_measured(Disk& disk) {
  const double cycle_s = disk.cycle_s();
  for (auto& s : disk.admitted) {
    const auto m = s.io_id ? disk.io->measured(s.io_id) : std::nullopt;
    if (!m) continue;  // not running long enough yet: its declared rates stand
    s.measured_mean = Rate::from_bytes_over(m->bytes_mean, cycle_s);
    s.measured_stddev = Rate::from_bytes_over(m->bytes_sd(), cycle_s);
    s.measured_io_s = m->time_mean_s;
  }
}

void DiskSet::bind_io_id(Disk& disk, std::uint64_t demand_id, std::uint64_t io_id) {
  std::lock_guard lock(disk.mu);
  for (auto& s : disk.admitted) {
    if (s.id == demand_id) s.io_id = io_id;
  }
}

void DiskSet::publish_admitted(const Disk& disk) noexcept {
  auto* m = disk.io->metrics();
  if (!m) return;
  Rate admitted;
  for (const auto& s : disk.admitted) admitted += s.peak_rate;
  double busy = 0, playback = 0;
  if (const auto* adm = disk.io->admission()) {
    busy = adm->predicted_busy(disk.admitted) / disk.cycle_s();
    playback = admission::playback_busy(*adm, disk.admitted) / disk.cycle_s();
  }
  m->admitted(disk.admitted.size(), admitted, busy);
  m->playback_share_in_use(playback);
}

Disk* DiskSet::disk_of_volume(std::int64_t volume_id) noexcept {
  for (auto& d : disks_) {
    if (d->volume && d->volume->volume_id == volume_id) return d.get();
  }
  return nullptr;
}

}  // namespace vigil::server
