#pragma once
// An export is built here: a clip's frames (read by clip_source) muxed into one MP4 in memory,
// index first (common/media_writer, FFmpeg's mov muxer), without re-encoding. The HTTP route
// (api/http_media) parses the request, caches the result and serves byte ranges of it.
// Thread: any (CPU only: no disk, no database). Errors: exceptions from the muxer.
#include <cstddef>
#include <memory>
#include <string>
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

// The camera's audio over the same range (its own stream, docs/media.md "Audio"): its codec, its
// frames, and the range asked [FROM_US, TO_US) (the clip's first GOP may begin before it), muxed
// beside the video.
// EXACT: the file holds the audio of [FROM_US, TO_US) and nothing else — an HLS segment, or one
// fragment of a streamed export, whose neighbours hold the audio before and after it, so no frame
// is in two of them.
struct AudioClip {
  media::CodecInfo codec;
  Clip clip;
  std::int64_t from_us = 0, to_us = 0;
  bool exact = false;
};

// Whether an HLS rendition carries CODEC's audio: AAC only. G.711 has no MP4 sample entry;
// Opus in MP4 is experimental in FFmpeg 5.1's muxer and Safari's HLS player does not take it, and
// one playlist serves every player (docs/media.md, "Audio"): those cameras' HLS is their video.
bool hls_takes_audio(const std::string& codec);

// Writes CLIP's frames to WRITER in decode order; a frame recorded without a pts takes the previous
// frame's (FIRST_PTS_US before the first), one without a dts its pts. What an MP4 export and an
// HLS segment both need. AUDIO (the writer has its track): its frames interleaved by time, those
// from FIRST_PTS_US up to its TO_US (or the video's end, if later): the audio recorded in the range
// after the video's last frame is in the file too. A caller whose audio starts before the video
// passes that start as FIRST_PTS_US (audio_start_us). An EXACT audio clip: its [FROM_US, TO_US)
// alone.
void write_clip(media::MediaWriter& writer, const Clip& clip, std::int64_t first_pts_us,
                const AudioClip* audio = nullptr);

// Where a file with VIDEO_ORIGIN_US's video and AUDIO starts: at the video, or at the first audio
// frame recorded in the range asked where that comes first (an AAC file's priming frame, a camera's
// sound in the moment before its first keyframe): no audio of the range is left out for coming
// first.
std::int64_t audio_start_us(std::int64_t video_origin_us, const AudioClip& audio);

// Whether the muxer takes CODEC's parameters (its extradata above all): a fragmented MP4's
// header is written and dropped. A route that answers before it muxes (a streamed export's head,
// an HLS playlist) asks first, so recorded bytes FFmpeg refuses are a 422, not a cut stream.
// AUDIO: with that audio track too. Throws the muxer's std::runtime_error.
void check_muxable(const media::CodecInfo& codec, const media::CodecInfo* audio = nullptr);

// The clip's frames muxed into one MP4, index first, media time from the first frame.
// AUDIO: the camera's audio beside it (not in trick play, which has no audio).
std::shared_ptr<const std::vector<std::byte>> build_mp4(const ClipPlan& plan, const Clip& clip,
                                                        const Mp4Rendition& rendition,
                                                        const AudioClip* audio = nullptr);

}  // namespace vigil::server
