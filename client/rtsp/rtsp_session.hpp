#pragma once
// One camera's RTSP session over TCP with interleaved RTP (RFC 2326 §10.12): DESCRIBE, SETUP of
// its H.264 or H.265 video (and, when asked, of its audio: sdp.hpp, on its own channel pair), PLAY, a keep-alive every half session timeout, TEARDOWN at the end.
// Why not libavformat's RTSP client: it reads each interleaved RTP packet with three recv() and
// three poll() calls (the '$', the header, the payload); at a 4 Mbit/s camera that is ~2,000
// system calls a second, over half of an ingest worker's CPU. This session reads up to
// kReadBytes at a time and parses the frames out of its own buffer.
// Thread: one owner; STOP and INTERRUPTED (set from any thread) are looked at every
// kPollSlice while waiting on the camera. Errors: the constructor throws std::runtime_error (the
// camera's URL in it with its password masked); read() returns false at the end, with error() saying
// why ("" for a stop).
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "client/rtsp/rtp_depacketizer.hpp"
#include "client/rtsp/rtsp_message.hpp"
#include "client/rtsp/sdp.hpp"

namespace vigil::client::rtsp {

// The camera speaks, but not what this session reads (no H.264 or H.265 video, RTP over UDP
// only): the caller may read it another way.
struct UnsupportedStream : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline constexpr std::size_t kReadBytes = 64 * 1024;
inline constexpr std::chrono::milliseconds kPollSlice{100};
// While media flows the session wakes once this much of it (at the advertised rate) has arrived,
// within these bounds (kMinBatchBytes without an advertised rate).
inline constexpr std::chrono::milliseconds kBatch{40};
inline constexpr std::size_t kMinBatchBytes = 2 * 1024, kMaxBatchBytes = 32 * 1024;
// Audio frames held until the reader takes them (it does after every video frame): a camera
// whose video stalls while its audio flows must not make the session hold audio without end.
inline constexpr std::size_t kMaxPendingAudioFrames = 1000;

class RtspSession {
 public:
  // IO_TIMEOUT: how long the camera may stay silent (connecting, answering, sending media).
  RtspSession(const std::string& url, const std::atomic<bool>& stop, const std::atomic<bool>& interrupted,
              std::chrono::milliseconds io_timeout = std::chrono::seconds(10), bool with_audio = false);
  ~RtspSession();
  RtspSession(const RtspSession&) = delete;
  RtspSession& operator=(const RtspSession&) = delete;

  const SdpVideo& video() const { return video_; }
  // The audio set up (WITH_AUDIO and the SDP offers one this session reads); nullopt otherwise.
  const std::optional<SdpAudio>& audio() const { return audio_; }
  // What the camera's audio is when it is not set up although asked for ("G726-32", or why its
  // SETUP failed); empty when set up or there is none.
  const std::string& skipped_audio() const { return skipped_audio_; }
  // Appends the audio frames completed so far (by read()) to OUT, in order, and forgets them.
  void take_audio(std::vector<AudioFrame>& out);
  // Reads until at least one access unit is complete and appends them to OUT; false: the
  // session ended (error() says why; empty for a stop or interrupt).
  bool read(std::vector<AccessUnit>& out);
  const std::string& error() const { return error_; }
  const RtpDepacketizer& depacketizer() const { return *depacketizer_; }

 private:
  void connect_to(const RtspUrl& url);
  void set_up_audio(const std::string& base, std::string_view sdp);
  // Sends all of BYTES; the reason when it could not (a stop, an error, the camera not reading).
  std::optional<std::string> send_all(const std::string& bytes);
  // Reads more bytes into the buffer; false on a stop, the camera closing or a timeout (error_).
  bool receive();
  // Sends METHOD for URI and returns its response, answering one 401 with the URL's credentials.
  RtspMessage transact(const std::string& method, const std::string& uri, const std::string& extra_headers);
  // The next message in the buffer that is not interleaved media (reading as needed); interleaved
  // frames before it are handed to the depacketizer.
  std::optional<RtspMessage> next_message();
  // Handles what the buffer holds: interleaved frames to the depacketizer, messages (keep-alive
  // answers, a camera's own requests) skipped. false: a malformed message (error_).
  bool drain_buffer(std::vector<AccessUnit>* out, std::optional<RtspMessage>* message);
  bool keep_alive();  // false: not sent (error_)
  bool stopping() const { return stop_.load() || interrupted_.load(); }
  [[noreturn]] void fail(const std::string& why) const;

  const std::atomic<bool>& stop_;
  const std::atomic<bool>& interrupted_;
  const std::chrono::milliseconds io_timeout_;
  RtspUrl url_;
  std::string shown_url_;  // the URL for messages: its password masked, its user kept (which account)
  int fd_ = -1;
  std::vector<std::uint8_t> buffer_;
  std::size_t begin_ = 0, end_ = 0;  // the unparsed bytes: buffer_[begin_, end_)
  bool last_read_filled_ = false;    // the last recv() filled the buffer: read again before waiting
  int cseq_ = 0;
  std::optional<RtspMessage> challenge_;  // the camera's 401, answered on every later request
  std::string session_id_, play_uri_;
  std::chrono::seconds keep_alive_every_{30};
  std::chrono::steady_clock::time_point last_keep_alive_;
  int rtp_channel_ = 0;
  SdpVideo video_;
  std::optional<RtpDepacketizer> depacketizer_;
  int audio_channel_ = -1;
  std::optional<SdpAudio> audio_;
  std::optional<AudioDepacketizer> audio_depacketizer_;
  std::vector<AudioFrame> audio_frames_;
  std::uint64_t audio_dropped_ = 0;  // frames over kMaxPendingAudioFrames, since the last one kept
  std::string skipped_audio_;
  std::string error_;
};

}  // namespace vigil::client::rtsp
