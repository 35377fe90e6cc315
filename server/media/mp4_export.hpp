#pragma once
// An export is built here: a clip's frames (read by clip_source) muxed into one MP4 in memory,
// index first (common/media_writer, FFmpeg's mov muxer), without re-encoding. The HTTP route
// (api/http_media) parses the request, caches the result and serves byte ranges of it.
// Thread: any (CPU only: no disk, no database). Errors: exceptions from the muxer.
#include <cstddef>
#include <memory>
#include <vector>

#include "common/media_writer.hpp"
#include "server/media/clip_source.hpp"

namespace vigil::server {

struct Mp4Rendition {
  // Trick play: keyframes only (in the clip's reading order), re-timed to play at RATE: keyframe
  // K at K's recording distance from the first keyframe served / RATE, each lasting until the
  // next. REVERSE (the clip was read from the end back): that distance runs backwards
  // (last_pts − K.pts), so the MP4's time increases while the recording time decreases.
  bool keyframes_only = false;
  double rate = 1;
  bool reverse = false;
};

// The camera's audio over the same range (its own stream, docs/media.md "Audio"): its codec and
// its frames, muxed beside the video.
struct AudioClip {
  media::CodecInfo codec;
  Clip clip;
};

// Writes CLIP's frames to WRITER in decode order; a frame recorded without a pts takes the previous
// frame's (FIRST_PTS_US before the first), one without a dts its pts. What an MP4 export and an
// HLS segment both need. AUDIO (the writer has its track): its frames interleaved by time, those
// from FIRST_PTS_US up to the video's end (the file starts and ends with the video).
void write_clip(media::MediaWriter& writer, const Clip& clip, std::int64_t first_pts_us,
                const AudioClip* audio = nullptr);

// Whether the muxer takes CODEC's parameters (its extradata above all): a fragmented MP4's
// header is written and dropped. A route that answers before it muxes (a streamed export's head,
// an HLS playlist) asks first, so recorded bytes FFmpeg refuses are a 422, not a cut stream.
// Throws the muxer's std::runtime_error.
void check_muxable(const media::CodecInfo& codec);

// The clip's frames muxed into one MP4, index first, media time from the first frame.
// AUDIO: the camera's audio beside it (not in trick play, which has no audio).
std::shared_ptr<const std::vector<std::byte>> build_mp4(const ClipPlan& plan, const Clip& clip,
                                                        const Mp4Rendition& rendition,
                                                        const AudioClip* audio = nullptr);

}  // namespace vigil::server
