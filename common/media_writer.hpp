#pragma once
// Remuxing stored frames into a container with libavformat, without re-encoding: MP4 (index
// first), fragmented MP4 (HLS init and media segments), Matroska, MPEG-TS. Shared by `vigil
// play` (frames from the wire protocol) and vigild's HTTP media routes (frames from the disk).
//
// Timestamps go in as microseconds (what records and the wire protocol carry) and out in the
// stream's time base; the writer keeps dts strictly rising and pts ≥ dts, which muxers demand
// and recordings with timestamp jumps do not always give.
// Payloads are handed to libavformat without a copy (non-refcounted packets, av_write_frame).
// Beside the video, an optional audio track (a camera's audio stream: AAC, G.711, Opus) is muxed
// as it was recorded, never transcoded; the caller interleaves the two by time (each frame goes
// to its track: Frame::audio). docs/media.md, "Audio", says which containers take which codec.
// Thread: one thread at a time. Errors: exceptions (std::runtime_error with libav's reason).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

struct AVFormatContext;
struct AVPacket;

namespace vigil::media {

// What a muxer must know of a stream (the catalog's or PlaybackStarted's).
struct CodecInfo {
  std::string codec_name;  // FFmpeg's name: h264, hevc; audio: aac, pcm_mulaw, pcm_alaw, opus
  int width = 0, height = 0;
  std::int64_t bit_rate = 0;
  std::string extradata{};  // SPS/PPS (avcC/hvcC) as recorded; audio: AudioSpecificConfig, Opus head
  // Audio: 0 when unknown (then G.711 is 8000 Hz mono, AAC's come from its config, Opus is 48 kHz).
  int sample_rate = 0, channels = 0;
};

struct Frame {
  std::int64_t pts_us = 0, dts_us = 0, duration_us = 0;
  bool keyframe = false;
  std::span<const std::byte> payload;
  bool audio = false;  // a frame of the audio track (the writer was made with one)
};

// Whether FORMAT (an FFmpeg muxer name: mp4, matroska, mpegts) takes CODEC's audio as it is.
// MP4 takes AAC and Opus (it has no G.711 sample entry); QuickTime (mov) AAC and G.711 ('ulaw',
// 'alaw'); MPEG-TS AAC and Opus; Matroska all four.
bool container_takes_audio(const std::string& format, const std::string& codec);

// Bytes a fragmented MP4 muxer wrote to memory.
using Bytes = std::vector<std::byte>;

class MediaWriter {
 public:
  // FILE: a path, or "-" for standard output. FORMAT: mp4, matroska, mpegts, or "" for the
  // file's extension (stdout: mpegts). A seekable MP4 gets its index first (+faststart); MP4 on
  // a pipe is fragmented.
  // AUDIO: the audio track's codec (nullptr: video only); refused where the container does not
  // take it (container_takes_audio).
  static MediaWriter to_file(const std::string& file, const std::string& format, const CodecInfo& codec,
                             const CodecInfo* audio = nullptr);
  // Fragmented MP4 in memory, for HLS: take_output() after the header is the init segment
  // (ftyp + moov); after frames and flush_fragment(), one media segment (moof + mdat) whose
  // decode time is the frames' distance from ORIGIN_US, so segments written by separate
  // writers line up on one timeline.
  static MediaWriter fragmented(const CodecInfo& codec, std::int64_t origin_us, const CodecInfo* audio = nullptr);
  // A whole MP4 in memory with its index (moov) first, for HTTP export: FRAME_COUNT frames
  // will be written (the index's room is reserved for them up front, so it is written in
  // place at finish() and the media data never moves); media time starts at ORIGIN_US.
  // take_output() after finish().
  // FRAME_COUNT counts the audio track's frames too.
  static MediaWriter mp4_in_memory(const CodecInfo& codec, std::size_t frame_count, std::int64_t origin_us,
                                   const CodecInfo* audio = nullptr);

  MediaWriter(MediaWriter&&) noexcept;
  MediaWriter& operator=(MediaWriter&&) noexcept;
  ~MediaWriter();

  void write(const Frame& frame);
  bool has_audio() const noexcept;
  void flush_fragment();  // fragmented: closes the current fragment
  void finish();          // writes the trailer (the MP4 index); the file is complete
  Bytes take_output();    // fragmented: what was written since the last call
  std::uint64_t frames() const noexcept { return frames_; }

 private:
  struct Impl;
  explicit MediaWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::uint64_t frames_ = 0;
};

}  // namespace vigil::media
