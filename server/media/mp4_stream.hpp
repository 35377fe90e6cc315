#pragma once
// An export too large to build in memory, written while it is read: fragmented MP4 (ftyp +
// moov with no samples, then one moof + mdat per batch of GOPs read), the same frames and
// timestamps as build_mp4's file, the index spread over the fragments instead of first. The
// HTTP route sends each piece as a chunk as soon as it is made (StreamedResponse).
// Memory, whatever the export's length: the reader's buffers (PlaybackStream's bound: 2 ×
// batch_bytes plus a GOP) and the fragment made of one batch (batch_bytes plus a GOP) — at most
// 3 × batch_bytes plus two GOPs.
// With the camera's audio (AUDIO, AAC or Opus: docs/media.md "Audio"), each fragment holds the
// audio up to its last video frame, read by a second cursor as the video goes (plus the audio
// GOPs that reach past it, a second each); the last one holds the audio recorded after the
// video's end, up to the range's. The file starts where build_mp4's does (audio_start_us).
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
#include "server/media/mp4_export.hpp"
#include "server/media/media_pool.hpp"

namespace vigil::server {

class Mp4Stream {
 public:
  static constexpr std::size_t kBatchBytes = 4u << 20;

  // POOL: where the muxing runs; null: in place.
  Mp4Stream(DiskSet* disks, const ClipPlan& plan, std::size_t batch_bytes = kBatchBytes, MediaPool* pool = nullptr,
            const std::optional<ClipPlan>& audio = std::nullopt);

  // The next bytes of the file; nullopt once it is whole.
  boost::asio::awaitable<std::optional<std::vector<std::byte>>> next();

  std::size_t frames() const noexcept { return frames_; }
  std::size_t damaged_gops() const noexcept { return damaged_gops_; }
  std::size_t audio_frames() const noexcept { return audio_frames_; }
  std::uint64_t bytes_read() const noexcept {
    return cursor_.bytes_read() + (audio_cursor_ ? audio_cursor_->bytes_read() : 0);
  }

 private:
  // Reads audio GOPs until they reach UNTIL_US (or the audio ends).
  boost::asio::awaitable<void> read_audio(std::int64_t until_us);
  // An exact AudioClip of the audio held, [audio_from_us_, TO_US); drops the GOPs wholly before TO_US.
  AudioClip take_audio(std::int64_t to_us);

  MediaPool* pool_;
  media::CodecInfo codec_;
  ClipCursor cursor_;
  std::optional<media::CodecInfo> audio_codec_;
  std::optional<ClipCursor> audio_cursor_;
  std::vector<std::shared_ptr<storage::PlaybackGop>> audio_gops_;  // read, not all written yet
  std::int64_t audio_from_us_ = 0, audio_to_us_ = 0;               // next to write; the range's end
  bool audio_read_all_ = false;
  std::size_t audio_frames_ = 0;
  std::optional<media::MediaWriter> writer_;
  std::int64_t last_pts_us_ = 0;
  std::size_t frames_ = 0, damaged_gops_ = 0;
  bool done_ = false;
};

}  // namespace vigil::server
