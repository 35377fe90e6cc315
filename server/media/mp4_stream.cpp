#include "server/media/mp4_stream.hpp"

#include <algorithm>

#include "server/media/mp4_export.hpp"

namespace vigil::server {

Mp4Stream::Mp4Stream(DiskSet* disks, const ClipPlan& plan, std::size_t batch_bytes, MediaPool* pool)
    : pool_(pool),
      codec_(plan.codec()),
      cursor_(disks, plan, storage::PlaybackRange{.from_pts = plan.from_us, .to_pts = plan.to_us}, batch_bytes) {}

boost::asio::awaitable<std::optional<std::vector<std::byte>>> Mp4Stream::next() {
  if (done_) co_return std::nullopt;
  for (;;) {
    auto batch = co_await cursor_.next();
    if (batch.empty()) {
      done_ = true;
      if (!writer_) co_return std::nullopt;  // nothing readable at all: the route answered before the head
      auto tail = co_await run_media(pool_, [this] {
        writer_->finish();
        return writer_->take_output();
      });
      if (tail.empty()) co_return std::nullopt;
      co_return tail;
    }
    Clip clip;
    for (auto& g : batch) {
      if (g->damaged) {
        ++damaged_gops_;
        continue;
      }
      clip.frames += g->frames.size();
      clip.gops.push_back(std::move(g));
    }
    if (clip.frames == 0) continue;  // only damaged GOPs: gaps, nothing to write
    // Muxing off the network thread; this coroutine (and so the stream's state) waits for it.
    auto out = co_await run_media(pool_, [this, &clip] {
      if (!writer_) {
        // Media time from the first frame served, as build_mp4's: the first GOP's earliest dts.
        std::optional<std::int64_t> origin;
        for (const auto& f : clip.gops.front()->frames) {
          const auto dts = f.header.dts != storage::kNoTimestamp ? f.header.dts : f.header.pts;
          if (dts != storage::kNoTimestamp) origin = origin ? std::min(*origin, dts) : dts;
        }
        last_pts_us_ = origin.value_or(0);
        writer_.emplace(media::MediaWriter::fragmented(codec_, last_pts_us_));
      }
      write_clip(*writer_, clip, last_pts_us_);
      writer_->flush_fragment();
      return writer_->take_output();  // the init segment too, the first time
    });
    for (const auto& f : clip.gops.back()->frames) {
      if (f.header.pts != storage::kNoTimestamp) last_pts_us_ = f.header.pts;
    }
    frames_ += clip.frames;
    co_return out;
  }
}

}  // namespace vigil::server
