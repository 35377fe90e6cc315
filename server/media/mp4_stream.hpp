#pragma once
// An export too large to build in memory, written while it is read: fragmented MP4 (ftyp +
// moov with no samples, then one moof + mdat per batch of GOPs read), the same frames and
// timestamps as build_mp4's file, the index spread over the fragments instead of first. The
// HTTP route sends each piece as a chunk as soon as it is made (StreamedResponse).
// Memory, whatever the export's length: the reader's buffers (PlaybackStream's bound: 2 ×
// batch_bytes plus a GOP) and the fragment made of one batch (batch_bytes plus a GOP) — at most
// 3 × batch_bytes plus two GOPs.
// Thread: one coroutine at a time (the session's network thread); the muxing runs on the media
// pool (media_pool.hpp) while it waits. Errors: exceptions (ApiError 503 from the constructor for
// a volume not open here, 422 for parameters outside the media limits or refused by the muxer;
// std::system_error for a device error).
#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <optional>
#include <vector>

#include "common/media_writer.hpp"
#include "server/media/clip_source.hpp"
#include "server/media/media_pool.hpp"

namespace vigil::server {

class Mp4Stream {
 public:
  static constexpr std::size_t kBatchBytes = 4u << 20;

  // POOL: where the muxing runs; null: in place.
  Mp4Stream(DiskSet* disks, const ClipPlan& plan, std::size_t batch_bytes = kBatchBytes, MediaPool* pool = nullptr);

  // The next bytes of the file; nullopt once it is whole.
  boost::asio::awaitable<std::optional<std::vector<std::byte>>> next();

  std::size_t frames() const noexcept { return frames_; }
  std::size_t damaged_gops() const noexcept { return damaged_gops_; }
  std::uint64_t bytes_read() const noexcept { return cursor_.bytes_read(); }

 private:
  MediaPool* pool_;
  media::CodecInfo codec_;
  ClipCursor cursor_;
  std::optional<media::MediaWriter> writer_;
  std::int64_t last_pts_us_ = 0;
  std::size_t frames_ = 0, damaged_gops_ = 0;
  bool done_ = false;
};

}  // namespace vigil::server
