#pragma once
// The server side of playback sessions (docs/protocol.md, "Playback"): an OpenPlayback is
// planned from the catalog (closed segments of the camera in the range, on the catalog pool),
// admitted on the disk holding them at its playback rate (the recording's rate × speed;
// keyframes-only and reverse at the keyframe share of it), and its PlaybackStream joins that
// disk's cycle scheduler, which fills its double buffer once per cycle. A seek or rate change
// is a new playback: its first IO goes to the head of the scheduler's queue, so it waits for
// one chunk of stream IO, not a cycle (the preemption of Semi-preemptible IO).
// Thread: open() is awaited by network coroutines; close() from any thread; the stream's
// callbacks run on the IO thread and only post a wake-up. Errors: open() answers
// PlaybackStarted or Refuse. A live playback (OpenPlayback.live) is served from the camera's
// LiveFeed while it records: no disk IO, so nothing to admit on a disk. A range only the archive
// holds is read from the object store by Range GETs (ArchiveReads' pump, docs/archive.md): no disk
// is admitted, and its stream is driven off every IO and network thread.
// Recording comes first (admission/playback_share.hpp): playbacks are admitted within their
// disk's playback share, and a recording that needs their time ends the newest ones — the
// playback's EndedNotice says so and its session is woken to tell the viewer. A playback paused
// longer than pause_release() gives its share back (suspend) and is opened again on resume.
#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>

#include "admission/admission.hpp"
#include "common/track.hpp"
#include "proto/vigil.pb.h"
#include "server/core/catalog_pool.hpp"
#include "server/core/live_feed.hpp"
#include "catalog/playback_rows.hpp"
#include "server/disks/disk_set.hpp"
#include "storage/playback_stream.hpp"

namespace vigil::server {

// Share of a GOP's bytes that is its keyframe, for charging keyframes-only playback (typical
// H.264/H.265 surveillance GOPs of 1–2 s). A wrong guess slows that trick play down or speeds it
// up; it never takes disk time from other streams, because the stream reads only what it was
// charged for per cycle.
inline constexpr double kKeyframeShare = 0.35;
inline constexpr double kMaxPlaybackRate = 64.0;
// Playback is charged at the stored data rate × this (VBR bursts within a segment).
inline constexpr double kPlaybackHeadroom = 1.5;

// Set once, by whichever thread admits a recording that ends the playback; read by its session.
class EndedNotice {
 public:
  void set(std::string reason) {
    std::lock_guard lock(mu_);
    if (!reason_) reason_ = std::move(reason);
  }
  std::optional<std::string> reason() const {
    std::lock_guard lock(mu_);
    return reason_;
  }

 private:
  mutable std::mutex mu_;
  std::optional<std::string> reason_;  // guarded by mu_
};

class PlaybackService {
 public:
  struct Playback {
    std::uint64_t id = 0;        // in MediaPackets and Control: the same across seeks and rate changes
    std::uint64_t sched_id = 0;  // on the disk's scheduler: new for every read stream
    Disk* disk = nullptr;
    admission::StreamDemand demand;
    std::shared_ptr<storage::PlaybackStream> stream;
    proto::OpenPlayback request;
    Track track;                          // the camera's track it plays (request's role and media_kind)
    std::int64_t from_us = 0, to_us = 0;  // what the recording covers of the request
    std::int64_t next_from_us = 0;        // where the range's next part begins (PlaybackEnd); 0: none
    std::shared_ptr<LiveTap> live;        // live view: frames from the recording session, no disk
    // A recorded range that reaches the camera's open segment continues at its live edge (the
    // live tail): first with what became durable since (extend()), then from the live feed.
    bool reaches_open = false;
    bool live_tail = false;         // LIVE continues a recorded range: it ends at request.end_us
    std::shared_ptr<LiveTap> tail;  // subscribed once the recorded part is read to its end
    std::int64_t volume_id = 0;
    std::string codec{}, extradata{};
    std::size_t cycle_bytes = 0;
    std::function<void()> notify{};
    // A recording needed the disk time: the playback is over (its share is gone already).
    std::shared_ptr<EndedNotice> ended = std::make_shared<EndedNotice>();
    // Off its disk while paused (suspend): DISK is null, and only a resume re-admits it.
    bool suspended = false;
    // Read from the archive (DISK null, nothing admitted): set to stop its pump (ArchiveReads).
    std::shared_ptr<std::atomic<bool>> archive_stop{};
  };

  // PAUSE_RELEASE: how long a paused playback keeps its disk share (--playback-pause-release).
  PlaybackService(DiskSet& disks, LiveFeeds& feeds, CatalogPool& catalog,
                  std::chrono::milliseconds pause_release = std::chrono::seconds(10))
      : disks_(disks), feeds_(feeds), catalog_(catalog), pause_release_(pause_release) {}

  std::chrono::milliseconds pause_release() const noexcept { return pause_release_; }

  using OpenResult = std::variant<proto::PlaybackStarted, proto::Refuse>;
  // ID: reuse this playback id (a seek or rate change continues the same client-visible
  // playback); 0 for a new one.
  boost::asio::awaitable<OpenResult> open(const proto::OpenPlayback& request, const std::function<void()>& notify,
                                          std::shared_ptr<Playback>& out, std::uint64_t id = 0);
  // Takes the playback off its disk and releases its admitted share.
  void close(const std::shared_ptr<Playback>& p);
  // P, paused for pause_release(), gives its disk share back: its read stream leaves the disk
  // (counted as released: paused); P stays, suspended, until the session re-opens it on resume.
  void suspend(Playback& p);

  // The live tail (P reaches the open segment and its stream is read to the end): a new read
  // stream on P's disk, under P's admitted share, of what the recording made durable in
  // [FROM_US, P's end) since P was planned — from memory (RecentSegments), no catalog (more).
  // Nothing new is durable yet while the camera still records here (not_yet), or ever (over).
  // Same volume and codec parameters only (a change ends P).
  enum class Extended { more, not_yet, over };
  Extended extend(Playback& p, std::int64_t from_us);
  // A tap on P's camera's live feed from its next frame, for the switch to live; null when the
  // camera no longer records.
  std::shared_ptr<LiveTap> subscribe_tail(const Playback& p);
  // P now plays TAP (its recorded stream is taken off the disk, its share released).
  void go_live(Playback& p, std::shared_ptr<LiveTap> tap);

 private:
  // PLAN's segments are archived: read by ArchiveReads' pump, no disk admitted.
  OpenResult open_archived(const proto::OpenPlayback& request, const Track& track, catalog::PlaybackPlan plan,
                           const std::function<void()>& notify, std::shared_ptr<Playback>& out, std::uint64_t id);
  OpenResult open_live(const proto::OpenPlayback& request, const Track& track, const std::function<void()>& notify,
                       std::shared_ptr<Playback>& out, std::uint64_t id);

  DiskSet& disks_;
  LiveFeeds& feeds_;
  CatalogPool& catalog_;
  std::chrono::milliseconds pause_release_;
  std::atomic<std::uint64_t> next_id_{1};
};

}  // namespace vigil::server
