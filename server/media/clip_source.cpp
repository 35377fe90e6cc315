#include "server/media/clip_source.hpp"

#include <algorithm>
#include <cstdio>
#include <pqxx/pqxx>

#include "common/media_limits.hpp"
#include "server/media/clip_reader.hpp"
#include "server/net/api_error.hpp"
#include "server/disks/disk_set.hpp"

namespace http = boost::beast::http;

namespace vigil::server {
namespace {

// Logical bytes of SEG's GOPs that intersect [FROM, TO).
std::uint64_t range_bytes(const storage::PlaybackSegment& seg, std::int64_t from_us, std::int64_t to_us) {
  const auto g = seg.gops.entries();
  if (g.empty()) return 0;
  const std::size_t first = seg.gops.at_or_before(from_us).value_or(0);
  std::uint64_t end = seg.end_offset;
  for (std::size_t i = first + 1; i < g.size(); ++i) {
    if (g[i].pts >= to_us) {
      end = g[i].offset;
      break;
    }
  }
  return end > g[first].offset ? end - g[first].offset : 0;
}

// FNV-1a, 64 bits: an ETag needs to tell versions apart, not resist an adversary (the key is
// built by the server from catalog rows).
std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

media::CodecInfo ClipPlan::codec() const {
  // The catalog's 0 is "not kept" (video, or a recording before they were kept): nothing to check.
  const auto given = [](int v) { return v > 0 ? std::optional<std::int64_t>(v) : std::nullopt; };
  // The trust boundary again on the way out: a recording written before the limits existed, or
  // a volume from elsewhere, never reaches FFmpeg with parameters open-record would refuse now.
  // The catalog keeps no time base (records carry microseconds): the default one is checked.
  if (auto breach = media_limits_breach({.codec = plan.codec,
                                         .extradata = plan.extradata,
                                         .width = plan.width,
                                         .height = plan.height,
                                         .sample_rate = given(plan.sample_rate_hz),
                                         .channels = given(plan.channels)});
      !breach.empty()) {
    throw ApiError(ApiErrc::unprocessable, "the recording of '" + camera + "' is outside the media limits: " + breach);
  }
  return {.codec_name = plan.codec,
          .width = plan.width,
          .height = plan.height,
          .bit_rate = plan.rate_bps,
          .extradata = plan.extradata,
          .sample_rate = plan.sample_rate_hz,
          .channels = plan.channels};
}

std::string ClipPlan::etag(const std::string& kind) const {
  std::string key =
      kind + "|" + std::to_string(plan.camera_id) + "|" + std::to_string(from_us) + "|" + std::to_string(to_us);
  // Where each segment is read from too: a clip cached while a segment was local is built again
  // once only the archive holds it (the same bytes, read from the store).
  for (std::size_t i = 0; i < plan.segments.size(); ++i) {
    const auto& s = plan.segments[i];
    const bool archived = i < plan.segment_archives.size() && plan.segment_archives[i];
    key += "|" + std::to_string(s.segment_id) + ":" + std::to_string(s.end_offset) + (archived ? "a" : "");
  }
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(fnv1a(key)));
  return "\"" + std::string(buf) + "\"";
}

boost::asio::awaitable<ClipPlan> plan_clip(CatalogPool& catalog, DiskSet* disks, const Track& track,
                                           std::int64_t from_us, std::int64_t to_us, std::uint64_t max_bytes) {
  ClipPlan out;
  out.camera = track.camera;
  out.track = track;
  // What this node recorded lately, up to its last durable cycle, beside the catalog's rows.
  const auto fresher = disks ? disks->recent().of(track, from_us, to_us) : std::vector<catalog::FreshSegment>{};
  // With an archive tier, a down node's copied segments are read from their copies.
  const std::string reader = disks ? disks->archive_reader_node() : std::string();
  // By reference: see CatalogPool::run; all outlive the co_await.
  out.plan = co_await catalog.run([&track, &from_us, &to_us, &fresher, &reader](pqxx::connection& c) {
    pqxx::work tx(c);
    auto p = catalog::plan_playback(tx, track, from_us, to_us, 10'000, fresher, false, reader);
    tx.commit();
    return p;
  });
  if (!out.plan.camera_exists) throw ApiError(ApiErrc::not_found, "no camera named '" + track.camera + "'");
  if (!out.plan.track_exists) {
    throw ApiError(ApiErrc::not_found, "camera '" + track.camera + "' has no " + track.kind_words() + " stream");
  }
  if (out.plan.segments.empty()) {
    throw ApiError(ApiErrc::not_found, "nothing of " + track.described() + " is recorded in that range");
  }
  out.from_us = std::max(from_us, out.plan.from_us);
  out.to_us = std::min(to_us, out.plan.to_us);
  for (const auto& s : out.plan.segments) out.estimated_bytes += range_bytes(s, from_us, to_us);
  if (out.estimated_bytes > max_bytes) {
    throw ApiError(ApiErrc::payload_too_large, "the range holds " + std::to_string(out.estimated_bytes >> 20) +
                                                   " MiB of video; at most " + std::to_string(max_bytes >> 20) +
                                                   " MiB per request: ask for a shorter range");
  }
  co_return out;
}

boost::asio::awaitable<std::optional<ClipPlan>> plan_audio_beside(CatalogPool& catalog, DiskSet* disks,
                                                                  const Track& video, std::int64_t from_us,
                                                                  std::int64_t to_us, std::uint64_t max_bytes) {
  const Track track{.camera = video.camera, .role = TrackRole::main, .media_kind = MediaKind::audio};
  std::optional<ClipPlan> plan;
  try {
    plan = co_await plan_clip(catalog, disks, track, from_us, to_us, max_bytes);
  } catch (const ApiError&) {
    // 404: no audio there; 413: more audio than the caller builds in memory.
  }
  co_return plan;
}

struct ClipCursor::Run {
  Disk* disk = nullptr;           // its segments' volume is open here, or
  std::size_t archive_block = 0;  // they are archived (records padded to this block)
  std::vector<storage::PlaybackSegment> segments;
};

ClipCursor::ClipCursor(DiskSet* disks, const ClipPlan& plan, storage::PlaybackRange range, std::size_t batch_bytes)
    : disks_(disks), range_(range), batch_bytes_(batch_bytes) {
  const auto& p = plan.plan;
  for (std::size_t i = 0; i < p.segments.size(); ++i) {
    const auto* archived = i < p.segment_archives.size() && p.segment_archives[i] ? &*p.segment_archives[i] : nullptr;
    if (archived) {
      // Only the archive holds it: read by Range GETs of its object, one reader for each run.
      if (!disks_ || !disks_->archive_reads()) {
        throw ApiError(ApiErrc::unavailable, "the recording is archived, and this server has no archive tier");
      }
      if (!objects_)
        objects_ = std::make_shared<const std::vector<std::optional<catalog::ArchivedObject>>>(p.segment_archives);
      if (runs_.empty() || runs_.back().archive_block != archived->block_bytes) {
        runs_.push_back(Run{.disk = nullptr, .archive_block = archived->block_bytes, .segments = {}});
      }
      runs_.back().segments.push_back(p.segments[i]);
      continue;
    }
    const std::int64_t volume = i < p.segment_volumes.size() ? p.segment_volumes[i] : p.volume_id;
    auto* disk = disks_ ? disks_->disk_of_volume(volume) : nullptr;
    if (!disk) {
      throw ApiError(ApiErrc::unavailable,
                     "the recording is on volume " + std::to_string(volume) + ", which this server has not opened");
    }
    if (runs_.empty() || runs_.back().disk != disk) runs_.push_back(Run{.disk = disk, .segments = {}});
    runs_.back().segments.push_back(p.segments[i]);
  }
  if (range_.direction == storage::ReadDirection::reverse) std::reverse(runs_.begin(), runs_.end());
}

ClipCursor::~ClipCursor() = default;
ClipCursor::ClipCursor(ClipCursor&&) noexcept = default;

boost::asio::awaitable<std::vector<std::shared_ptr<storage::PlaybackGop>>> ClipCursor::next() {
  for (;;) {
    if (!reader_) {
      if (at_ >= runs_.size()) co_return std::vector<std::shared_ptr<storage::PlaybackGop>>{};
      auto& run = runs_[at_++];
      if (run.disk) {
        reader_ = std::make_unique<ClipReader>(run.disk->io->scheduler(), std::move(run.segments), range_,
                                               run.disk->volume->volume->block_bytes(), batch_bytes_);
      } else {
        reader_ = std::make_unique<ClipReader>(*disks_->archive_reads(), objects_, std::move(run.segments), range_,
                                               run.archive_block, batch_bytes_);
      }
    }
    auto batch = co_await reader_->next();
    if (!batch.empty()) co_return batch;
    bytes_done_ += reader_->bytes_read();
    requests_done_ += reader_->requests();
    reader_.reset();
  }
}

std::uint64_t ClipCursor::bytes_read() const noexcept { return bytes_done_ + (reader_ ? reader_->bytes_read() : 0); }

std::uint64_t ClipCursor::requests() const noexcept { return requests_done_ + (reader_ ? reader_->requests() : 0); }

boost::asio::awaitable<Clip> read_clip(DiskSet* disks, const ClipPlan& plan, std::int64_t from_us, std::int64_t to_us,
                                       bool keyframes_only, storage::ReadDirection direction) {
  ClipCursor cursor(disks, plan,
                    storage::PlaybackRange{.from_pts = from_us,
                                           .to_pts = to_us,
                                           .keyframes_only = keyframes_only,
                                           .direction = direction});
  Clip clip;
  for (;;) {
    auto batch = co_await cursor.next();
    if (batch.empty()) break;
    for (auto& g : batch) {
      if (g->damaged) {
        ++clip.damaged_gops;
      } else {
        clip.frames += g->frames.size();
      }
      clip.gops.push_back(std::move(g));
    }
  }
  clip.bytes_read = cursor.bytes_read();
  clip.requests = cursor.requests();
  co_return clip;
}

}  // namespace vigil::server
