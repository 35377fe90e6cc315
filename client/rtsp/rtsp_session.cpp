#include "client/rtsp/rtsp_session.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "common/redact.hpp"

namespace vigil::client::rtsp {
namespace {

using Clock = std::chrono::steady_clock;

// "a-b" of a Transport header's interleaved= (the RTP channel is a).
std::optional<int> interleaved_channel(std::string_view transport) {
  const auto at = transport.find("interleaved=");
  if (at == std::string_view::npos) return std::nullopt;
  const auto digits = transport.substr(at + 12);
  int channel = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), channel);
  if (ec != std::errc() || channel < 0 || channel > 255) return std::nullopt;
  return channel;
}

}  // namespace

RtspSession::RtspSession(const std::string& url, const std::atomic<bool>& stop, const std::atomic<bool>& interrupted,
                         std::chrono::milliseconds io_timeout, bool with_audio)
    : stop_(stop),
      interrupted_(interrupted),
      io_timeout_(io_timeout),
      shown_url_(redact_credentials(url)),
      buffer_(kReadBytes) {
  std::string why;
  auto parsed = parse_rtsp_url(url, why);
  if (!parsed) throw std::runtime_error("cannot open " + shown_url_ + ": " + why);
  url_ = std::move(*parsed);
  try {
    connect_to(url_);
    const RtspMessage described = transact("DESCRIBE", url_.without_credentials, "Accept: application/sdp\r\n");
    auto video = parse_sdp_video(described.body, why);
    if (!video) throw UnsupportedStream(shown_url_ + ": " + why);
    video_ = std::move(*video);
    std::string base = url_.without_credentials;
    if (const auto b = described.header("content-base")) base = std::string(*b);
    const RtspMessage set_up =
        transact("SETUP", resolve_control(base, video_.control), "Transport: RTP/AVP/TCP;unicast;interleaved=0-1\r\n");
    if (const auto transport = set_up.header("transport")) {
      if (transport->find("TCP") == std::string_view::npos && transport->find("tcp") == std::string_view::npos) {
        throw UnsupportedStream(shown_url_ + ": RTP over UDP only (Transport: " + std::string(*transport) + ")");
      }
      rtp_channel_ = interleaved_channel(*transport).value_or(0);
    }
    const auto session = set_up.header("session");
    if (!session) fail("SETUP answered without a Session header");
    // "id;timeout=60": a keep-alive every half timeout keeps the session (60 s when unsaid).
    const std::string_view s = *session;
    session_id_ = std::string(s.substr(0, s.find(';')));
    if (const auto t = s.find("timeout="); t != std::string_view::npos) {
      int seconds = 0;
      const auto digits = s.substr(t + 8);
      std::from_chars(digits.data(), digits.data() + digits.size(), seconds);
      if (seconds >= 2) keep_alive_every_ = std::chrono::seconds(seconds / 2);
    }
    depacketizer_.emplace(video_.codec, video_.payload_type);
    if (with_audio) set_up_audio(base, described.body);
    play_uri_ = base;
    // No Range: a live camera plays from now anyway, and a Range asks a server to seek — which
    // GStreamer's RTSP server (1.22) cannot do on a shared live media whose first client is still
    // starting: it aborts (gst_rtsp_media_get_rates). A camera that insists gets one.
    try {
      transact("PLAY", play_uri_, "Session: " + session_id_ + "\r\n");
    } catch (const UnsupportedStream&) {
      throw;
    } catch (const std::runtime_error&) {
      if (stopping() || fd_ < 0) throw;
      transact("PLAY", play_uri_, "Session: " + session_id_ + "\r\nRange: npt=0.000-\r\n");
    }
    last_keep_alive_ = Clock::now();
    // A camera sends each frame as a run of RTP packets: woken for every packet, the session would
    // make a poll() and a recv() per packet again. Woken once kBatch of media has arrived (at the
    // rate the camera advertises; a camera closing wakes it at once), it takes several packets,
    // often whole frames, per recv(): a few tens of milliseconds later, which a recording with a
    // cycle of a second does not notice.
    const double rate_bytes_per_s = video_.bandwidth_bps > 0 ? static_cast<double>(video_.bandwidth_bps) / 8 : 0;
    const int low_water_bytes = rate_bytes_per_s > 0
                                    ? static_cast<int>(std::clamp(rate_bytes_per_s * kBatch.count() / 1000.0,
                                                                  double(kMinBatchBytes), double(kMaxBatchBytes)))
                                    : static_cast<int>(kMinBatchBytes);
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVLOWAT, &low_water_bytes, sizeof low_water_bytes);
  } catch (...) {
    if (fd_ >= 0) ::close(fd_);
    throw;
  }
}

// The audio on channels 2-3 of the same session. A camera that will not set it up still gives
// its video: the failure is said (skipped_audio), not thrown.
void RtspSession::set_up_audio(const std::string& base, std::string_view sdp) {
  auto audio = parse_sdp_audio(sdp, skipped_audio_);
  if (!audio) return;
  try {
    const RtspMessage set_up =
        transact("SETUP", resolve_control(base, audio->control),
                 "Transport: RTP/AVP/TCP;unicast;interleaved=2-3\r\nSession: " + session_id_ + "\r\n");
    const auto transport = set_up.header("transport");
    audio_channel_ = transport ? interleaved_channel(*transport).value_or(2) : 2;
  } catch (const std::runtime_error& e) {
    if (stopping() || fd_ < 0) throw;
    skipped_audio_ = std::string(ffmpeg_name(audio->codec)) + " (its SETUP failed: " + e.what() + ")";
    return;
  }
  audio_depacketizer_.emplace(audio->codec, audio->payload_type, audio->channels);
  audio_ = std::move(audio);
}

void RtspSession::take_audio(std::vector<AudioFrame>& out) {
  for (auto& f : audio_frames_) out.push_back(std::move(f));
  audio_frames_.clear();
}

RtspSession::~RtspSession() {
  if (fd_ < 0) return;
  if (!session_id_.empty()) {
    // Best effort, never waiting: the camera frees the session at once instead of at its timeout.
    const std::string bye = request("TEARDOWN", play_uri_, ++cseq_, "Session: " + session_id_ + "\r\n");
    [[maybe_unused]] const auto sent = ::send(fd_, bye.data(), bye.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  ::close(fd_);
}

void RtspSession::fail(const std::string& why) const {
  throw std::runtime_error("cannot open " + shown_url_ + ": " + why);
}

void RtspSession::connect_to(const RtspUrl& url) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(url.host.c_str(), std::to_string(url.port).c_str(), &hints, &found); rc != 0) {
    fail(std::string("cannot resolve ") + url.host + ": " + gai_strerror(rc));
  }
  std::string last_error = "no address";
  for (const addrinfo* a = found; a && fd_ < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      const auto deadline = Clock::now() + io_timeout_;
      pollfd p{fd, POLLOUT, 0};
      while ((rc = ::poll(&p, 1, static_cast<int>(kPollSlice.count()))) == 0 && !stopping() &&
             Clock::now() < deadline) {}
      int error = rc > 0 ? 0 : ETIMEDOUT;
      socklen_t length = sizeof error;
      if (rc > 0) ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
      rc = error == 0 ? 0 : -1;
      errno = error;
    }
    if (rc == 0) {
      fd_ = fd;
    } else {
      last_error = std::strerror(errno);
      ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  if (stopping()) fail("stopped");
  if (fd_ < 0) fail("cannot connect to " + url.host + ":" + std::to_string(url.port) + ": " + last_error);
}

std::optional<std::string> RtspSession::send_all(const std::string& bytes) {
  std::size_t sent = 0;
  const auto deadline = Clock::now() + io_timeout_;
  while (sent < bytes.size()) {
    const auto n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return std::strerror(errno);
    if (stopping()) return "stopped";
    if (Clock::now() >= deadline) return "the camera does not take our request";
    pollfd p{fd_, POLLOUT, 0};
    ::poll(&p, 1, static_cast<int>(kPollSlice.count()));
  }
  return std::nullopt;
}

bool RtspSession::receive() {
  if (begin_ > 0) {  // keep the unparsed tail at the front: the buffer never grows past one read
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == buffer_.size()) buffer_.resize(buffer_.size() * 2);  // one frame larger than the buffer
  const auto deadline = Clock::now() + io_timeout_;
  // Wait first, unless the last read filled the buffer (more may be waiting): a read that finds
  // nothing costs a system call for no bytes.
  bool wait = !last_read_filled_;
  int empty_slices = 0;
  for (;;) {
    if (wait) {
      if (stopping()) return false;
      if (Clock::now() >= deadline) {
        error_ = "no data from the camera for " + std::to_string(io_timeout_.count()) + " ms";
        return false;
      }
      pollfd p{fd_, POLLIN, 0};
      // Every second without a wake-up, read anyway: what is waiting may be less than the low
      // water mark (a camera far below its advertised rate, an answer to our keep-alive).
      if (::poll(&p, 1, static_cast<int>(kPollSlice.count())) == 0 && ++empty_slices % 10 != 0) continue;
    }
    wait = true;
    const std::size_t space = buffer_.size() - end_;
    const auto n = ::recv(fd_, buffer_.data() + end_, space, 0);
    if (n > 0) {
      end_ += static_cast<std::size_t>(n);
      last_read_filled_ = static_cast<std::size_t>(n) == space;
      return true;
    }
    if (n == 0) {
      error_ = "the camera closed the connection";
      return false;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      error_ = std::strerror(errno);
      return false;
    }
  }
}

bool RtspSession::drain_buffer(std::vector<AccessUnit>* out, std::optional<RtspMessage>* message) {
  while (begin_ < end_) {
    const std::uint8_t* at = buffer_.data() + begin_;
    const std::size_t available = end_ - begin_;
    if (at[0] == '$') {  // '$', channel, 16-bit length, the RTP (or RTCP) packet
      if (available < 4) return true;
      const std::size_t length = (std::size_t{at[2]} << 8) | at[3];
      if (available < 4 + length) {
        if (4 + length > buffer_.size()) buffer_.resize(4 + length);
        return true;
      }
      if (at[1] == rtp_channel_ && depacketizer_ && out) depacketizer_->push({at + 4, length}, *out);
      if (at[1] == audio_channel_ && audio_depacketizer_ && out) {
        const std::size_t before = audio_frames_.size();
        audio_depacketizer_->push({at + 4, length}, audio_frames_);
        if (audio_frames_.size() > kMaxPendingAudioFrames) {
          // Not taken for long (the video stalled): dropped, and the next frame kept says so.
          audio_dropped_ += audio_frames_.size() - before;
          audio_frames_.resize(before);
        } else if (audio_dropped_ > 0 && audio_frames_.size() > before) {
          audio_frames_[before].frames_lost_before += std::exchange(audio_dropped_, 0);
        }
      }
      begin_ += 4 + length;
      continue;
    }
    if (std::isalpha(at[0])) {  // a message: our keep-alive's answer, or a request of the camera's
      std::string why;
      auto m = parse_message({reinterpret_cast<const char*>(at), available}, why);
      if (!m) {
        if (!why.empty()) {
          error_ = "the camera sent a malformed message: " + why;
          return false;
        }
        if (available > kMaxHeadBytes + kMaxBodyBytes) {
          error_ = "the camera sent a message larger than " + std::to_string(kMaxHeadBytes + kMaxBodyBytes) + " bytes";
          return false;
        }
        return true;
      }
      begin_ += m->consumed_bytes;
      if (message) {
        *message = std::move(m);
        return true;
      }
      continue;
    }
    ++begin_;  // between frames, a byte that starts nothing: skip to the next frame
  }
  return true;
}

std::optional<RtspMessage> RtspSession::next_message() {
  for (;;) {
    std::optional<RtspMessage> m;
    if (!drain_buffer(nullptr, &m)) fail(error_);
    if (m) return m;
    if (!receive()) fail(error_.empty() ? "stopped" : error_);
  }
}

RtspMessage RtspSession::transact(const std::string& method, const std::string& uri, const std::string& extra_headers) {
  for (int attempt = 0;; ++attempt) {
    std::string headers = extra_headers;
    if (challenge_) {
      if (auto value = authorization(*challenge_, url_.user, url_.password, method, uri)) {
        headers += "Authorization: " + *value + "\r\n";
      }
    }
    const int cseq = ++cseq_;
    if (auto error = send_all(request(method, uri, cseq, headers))) fail(*error);
    for (;;) {
      RtspMessage m = *next_message();
      if (!m.is_response) continue;  // the camera's own request: nothing we serve
      const auto their_cseq = m.header("cseq");
      if (their_cseq && *their_cseq != std::to_string(cseq)) continue;  // an older request's answer
      if (m.status == 401 && attempt == 0 && !url_.user.empty()) {
        challenge_ = std::move(m);
        break;
      }
      if (m.status == 401)
        fail(url_.user.empty() ? "the camera wants credentials (401)" : "the camera refused the credentials (401)");
      if (m.status == 461) throw UnsupportedStream(method + " answered 461 Unsupported Transport (no RTP over TCP)");
      if (m.status < 200 || m.status >= 300) {
        fail(method + " answered " + std::to_string(m.status) + " " + m.reason);
      }
      return m;
    }
  }
}

bool RtspSession::keep_alive() {
  std::string headers = "Session: " + session_id_ + "\r\n";
  if (challenge_) {
    if (auto value = authorization(*challenge_, url_.user, url_.password, "OPTIONS", play_uri_)) {
      headers += "Authorization: " + *value + "\r\n";
    }
  }
  // OPTIONS: every camera answers it; its answer arrives among the media and is skipped.
  last_keep_alive_ = Clock::now();
  if (auto error = send_all(request("OPTIONS", play_uri_, ++cseq_, headers))) {
    error_ = "keep-alive not sent: " + *error;
    return false;
  }
  return true;
}

bool RtspSession::read(std::vector<AccessUnit>& out) {
  const std::size_t before = out.size();
  for (;;) {
    if (!drain_buffer(&out, nullptr)) return false;
    if (out.size() > before) return true;
    if (Clock::now() - last_keep_alive_ >= keep_alive_every_ && !keep_alive()) return false;
    if (!receive()) return false;
  }
}

}  // namespace vigil::client::rtsp
